import CFprint

/// Why the sensor asked for another try (libfprint's FP_DEVICE_RETRY codes).
public enum RetryHint: Sendable, Equatable {
    case general, tooShort, centerFinger, removeFinger

    init(code: Int32) {
        switch code {
        case Int32(FP_DEVICE_RETRY_TOO_SHORT.rawValue): self = .tooShort
        case Int32(FP_DEVICE_RETRY_CENTER_FINGER.rawValue): self = .centerFinger
        case Int32(FP_DEVICE_RETRY_REMOVE_FINGER.rawValue): self = .removeFinger
        default: self = .general
        }
    }
}

/// libfprint's FP_DEVICE_ERROR codes.
public enum DeviceErrorKind: Sendable, Equatable {
    case general, notSupported, notOpen, alreadyOpen, busy, protocolError, dataInvalid, dataNotFound, dataFull,
         dataDuplicate, removed, tooHot, unknown

    init(code: Int32) {
        switch code {
        case Int32(FP_DEVICE_ERROR_NOT_SUPPORTED.rawValue): self = .notSupported
        case Int32(FP_DEVICE_ERROR_NOT_OPEN.rawValue): self = .notOpen
        case Int32(FP_DEVICE_ERROR_ALREADY_OPEN.rawValue): self = .alreadyOpen
        case Int32(FP_DEVICE_ERROR_BUSY.rawValue): self = .busy
        case Int32(FP_DEVICE_ERROR_PROTO.rawValue): self = .protocolError
        case Int32(FP_DEVICE_ERROR_DATA_INVALID.rawValue): self = .dataInvalid
        case Int32(FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue): self = .dataNotFound
        case Int32(FP_DEVICE_ERROR_DATA_FULL.rawValue): self = .dataFull
        case Int32(FP_DEVICE_ERROR_DATA_DUPLICATE.rawValue): self = .dataDuplicate
        case Int32(FP_DEVICE_ERROR_REMOVED.rawValue): self = .removed
        case Int32(FP_DEVICE_ERROR_TOO_HOT.rawValue): self = .tooHot
        case Int32(FP_DEVICE_ERROR_GENERAL.rawValue): self = .general
        default: self = .unknown
        }
    }
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

    /// Takes ownership of `error` (frees it) and classifies it.
    static func take(_ error: UnsafeMutablePointer<GError>?) -> FprintError {
        guard let error else { return .other(domain: "", code: 0, message: "unknown error") }
        defer { g_error_free(error) }
        let domain = error.pointee.domain
        let code = error.pointee.code
        let message = error.pointee.message.map { String(cString: $0) } ?? ""
        if domain == fp_device_retry_quark() { return .retry(RetryHint(code: code)) }
        if domain == fp_device_error_quark() { return .device(DeviceErrorKind(code: code), code: code, message: message) }
        if domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue) { return .cancelled }
        let domainName = g_quark_to_string(domain).map { String(cString: $0) } ?? "unknown"
        return .other(domain: domainName, code: code, message: message)
    }
}
