import CQRencode
