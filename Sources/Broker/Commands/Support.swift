import FingerprintFlows
import FingersealCore
import FingersealWire
import FoundationEssentials

/// What the command handlers share: JSON output, option checks, audit wrappers.
extension Call {
    /// Sends `value` as one output message of JSON, encoded as the command line always has
    /// (sorted keys, pretty-printed, slashes unescaped, snake_case keys).
    func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        conversation.output(String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    /// The reader settings for a request: `--timeout` (`ScanOptions`: 1 to 600 seconds; not
    /// when the configuration fixed `timeout`) or the settings'.
    /// The prompt's end says how to cancel, as the channel decides (`Channel.cancelHint`).
    func scanSettings(maxTries: Int? = nil) throws -> ScanSettings {
        let seconds = given.command.scan.timeout ?? settings.timeout
        if seconds != settings.timeout && settings.fixed.contains("timeout") {
            throw FingersealError(.usage, Messages.fixedArgument(Option.scanTimeout.name, "timeout"))
        }
        return ScanSettings(timeout: Double(seconds), maxTries: maxTries ?? settings.maxTries,
                            cancelHint: channel.cancelHint)
    }

    /// The positional arguments the client sent.
    var arguments: [String] { request.arguments }
}

/// Runs `body`; when it fails (other than a mistake on the command line), records the
/// failure in the audit trail and rethrows. Recording itself never throws.
func recordingFailure<T>(_ action: AuditAction, _ trail: AuditTrail, vault: UnlockedVault? = nil,
                         _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as FingersealError where error.outcome != .usage && error.outcome != .noVault {
        trail.record(.failure(action: action, reason: error.auditReason), vault: vault)
        throw error
    }
}

/// Runs a whole command; when it fails (other than a mistake on the command line), logs the
/// failure to syslog without recording it in the trail: for commands whose failure leaves
/// the vault as it was (a refused sign-in).
func loggingFailure<T>(_ action: AuditAction, _ store: VaultStore, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as FingersealError where error.outcome != .usage {
        AuditTrail(store: store).log(.failure(action: action, reason: error.auditReason))
        throw error
    }
}
