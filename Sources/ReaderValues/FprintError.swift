/// Why the sensor asked for another try (libfprint's FP_DEVICE_RETRY codes; fprintd's
/// verify-retry-scan and friends).
public enum RetryHint: Sendable, Equatable {
    case general, tooShort, centerFinger, removeFinger
}

/// libfprint's FP_DEVICE_ERROR codes.
public enum DeviceErrorKind: Sendable, Equatable {
    case general, notSupported, notOpen, alreadyOpen, busy, protocolError, dataInvalid, dataNotFound, dataFull,
         dataDuplicate, removed, tooHot, unknown
}

public enum FprintError: Error, Equatable, Sendable {
    /// `fp_context_new` or the worker's main loop could not be created.
    case contextUnavailable
    /// No reader is connected (or none the allowed drivers handle).
    case noReader
    /// The requested reader id is not among the connected readers.
    case noSuchReader(String)
    /// The reader cannot do this (e.g. capture on a match-on-chip sensor).
    case notSupported(String)
    /// The sensor wants another try; the operation ended without a result.
    case retry(RetryHint)
    case cancelled
    /// Our own deadline passed (the operation was cancelled because of it).
    case timedOut
    /// An FP_DEVICE_ERROR from libfprint.
    case device(DeviceErrorKind, code: Int32, message: String)
    /// Any other GError: its domain, code and message.
    case other(domain: String, code: Int32, message: String)
    /// A system call failed.
    case system(operation: String, code: Int32)
    /// A serialized print could not be read back.
    case invalidPrint
}
