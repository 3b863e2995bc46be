import FingersealWire
import Localization

/// The one wording of every `OptionError`, linked by both ends (the CLI, which has no core,
/// and the broker), so a mistake on the command line reads the same whichever end finds it:
/// the CLI while parsing, or the broker decoding a request from another client.
extension OptionError {
    public var message: String {
        switch self {
        case let .unknown(name): tr("Unknown option %1$s. Run with --help to see the options.", String(name.prefix(64)))
        case let .takesNoValue(name): tr("The option %1$s takes no value.", name)
        case let .needsValue(name): tr("The option %1$s needs a value.", name)
        case let .number(name, range):
            tr("The option %1$s takes a whole number from %2$s to %3$s.", name, range.lowerBound, range.upperBound)
        case let .choice(name, choices):
            // "device, password or browser": the sentence the command line has always said.
            tr("The option %1$s takes %2$s.", name,
               choices.count > 1 ? tr("%1$s or %2$s", choices.dropLast().joined(separator: ", "), choices.last ?? "")
                                 : choices.joined())
        case .execAlone: tr("Use --exec on its own, without --print-token or --json.")
        case .unlockTakesNoArguments: tr("The unlock command takes no arguments. To run a command, put it after --exec.")
        case .stepUpNeedsContext: tr("Say which context to confirm, for example: fingerseal step-up payroll")
        case .proofNeedsMethodAndURL:
            tr("Say the request's method and its address, for example: fingerseal proof GET https://api.example.com/orders")
        case .proofBadNonce: tr("The nonce must be what the server sent in its DPoP-Nonce header: letters, digits and punctuation, without spaces.")
        case .checkOrEndAlone: tr("Use --check or --end on their own, with only the context.")
        case .sealNeedsContext: tr("Say which context to seal for with --context CONTEXT.")
        case .sealOneFile: tr("Give at most one file to seal.")
        case .revealNeedsFile: tr("Say which sealed file to reveal.")
        case .forgetOneOrAll: tr("Name one finger to forget, or use --all.")
        case .accountRemoveOne: tr("Name one account to remove, for example: fingerseal account remove NAME")
        case .accountPurgeOne: tr("Name one vault set aside, as fingerseal account list shows it, for example: fingerseal account purge ID")
        case .accountHookOne: tr("Name the account, as useradd and userdel do, for example: fingerseal account useradd NAME")
        }
    }
}
