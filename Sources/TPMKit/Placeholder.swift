import CTSS2
