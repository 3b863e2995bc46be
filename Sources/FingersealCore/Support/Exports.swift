@_exported import FingersealWire
