/// Something a reader operation reports while it runs (its end is a `ReaderResult`).
public enum ReaderEvent: Sendable {
    /// The sensor is ready for a finger now (libfprint's finger status gained "needed").
    case fingerNeeded
    /// Enrollment: `completed` of `total` scans are done.
    case enrollProgress(completed: Int, total: Int)
    /// The sensor wants the finger again, and says why.
    case hint(RetryHint)

    /// A scan of an enrollment was taken: the person gets the whole wait for the next one.
    public var isProgress: Bool {
        if case .enrollProgress = self { return true }
        return false
    }
}

/// How a reader operation ended. `Template` is what an enrolled or listed print is: libfprint's
/// FpPrint (FprintKit's `OperationResult`); fprintd keeps its prints itself (`Never`).
public enum ReaderResult<Template: Sendable>: Sendable {
    case enrolled(Template)
    case verified(matched: Bool)
    /// Index into the prints given to `identify`, or nil for no match.
    case identified(index: Int?)
    case captured(FingerprintImage)
    case listed([Template])
    case done
    case failed(FprintError)
}

extension ReaderResult where Template == Never {
    /// The same result where a print could be: fprintd's, as a backend's result.
    public func widened<Other>() -> ReaderResult<Other> {
        switch self {
        case let .verified(matched): return .verified(matched: matched)
        case let .identified(index): return .identified(index: index)
        case let .captured(image): return .captured(image)
        case .done: return .done
        case let .failed(error): return .failed(error)
        case .listed: return .listed([])
        case let .enrolled(never): switch never {}
        }
    }
}
