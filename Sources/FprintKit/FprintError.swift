import CFprint
import ReaderValues

// libfprint's codes and GErrors as the reader's value types.

extension RetryHint {
    init(code: Int32) {
        switch code {
        case Int32(FP_DEVICE_RETRY_TOO_SHORT.rawValue): self = .tooShort
        case Int32(FP_DEVICE_RETRY_CENTER_FINGER.rawValue): self = .centerFinger
        case Int32(FP_DEVICE_RETRY_REMOVE_FINGER.rawValue): self = .removeFinger
        default: self = .general
        }
    }
}

extension DeviceErrorKind {
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

extension FprintError {
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
