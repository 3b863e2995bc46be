import FingerprintFlows
import FingersealCore
import FingersealWire

/// The ways an unlock request is built. Each channel's permissions are decided here, once: a
/// PAM host's request comes from the stack's options alone (never a command-line flag), the
/// command line's from its flags within the site's limits, an application's from the ways it
/// allows.
extension UnlockRequest {
    /// A PAM host's `auth`: the finger, the PIN with `pin` (never with `prompt=none`, whose
    /// hosts answer every prompt with the password), the scan offered as the channel says
    /// when it starts, a token as `require_token` says, and with `stepup=CONTEXT ttl=T` a
    /// confirmation made within the stack's own T seconds.
    static func forPAMHost(_ call: Call) -> UnlockRequest {
        let options = call.settings
        let ttl = call.stepUpSeconds(options.stepUpTTL)
        return UnlockRequest(
            purpose: .authenticate,
            confirmation: options.stepUp.map { Confirmation(context: $0, fresh: false, acceptsWithin: ttl, lasts: ttl, holder: nil) },
            tokens: options.requireToken ? .required : .whenSignedIn,
            pin: options.pin && options.prompt != .none ? .fallback : .never,
            deviceID: nil,
            // How the prompt ends is the channel's, said when the scan starts (`pamPrompt`).
            scan: ScanSettings(timeout: Double(options.timeout), maxTries: options.maxTries, cancelHint: .none),
            pinWhileScanning: false,
            pamPrompt: options.prompt)
    }

    /// `unlock`, `token`, `step-up` and `reveal` as their channel asks them: the command
    /// line's flags, or what an application allows.
    static func forChannel(_ call: Call, _ purpose: Purpose, confirmation: Confirmation? = nil) throws -> UnlockRequest {
        guard let application = call.channel.application else {
            return try forCommandLine(call, purpose, confirmation: confirmation)
        }
        return try forApplication(call, application, purpose, confirmation: confirmation)
    }

    /// An application's, through the session agent: the ways it allows (every way when it
    /// names none) — a finger, the PIN typed while the reader waits (the dialog's field),
    /// the account password after the PIN is skipped or instead of it; only the PIN or the
    /// password for a fresh confirmation. The reader and the timeout are the system's.
    static func forApplication(_ call: Call, _ application: Application, _ purpose: Purpose,
                               confirmation: Confirmation? = nil) throws -> UnlockRequest {
        let fresh = confirmation?.fresh == true
        let pin = application.allows(.pin)
        return UnlockRequest(
            purpose: purpose,
            confirmation: confirmation,
            tokens: purpose == .accessToken ? .required : .none,
            finger: application.allows(.finger) && !fresh,
            pin: !pin ? .never : fresh || !application.allows(.finger) ? .only : .fallback,
            password: application.allows(.password),
            deviceID: nil,
            scan: try call.scanSettings(),
            pinWhileScanning: pin,
            pamPrompt: nil)
    }

    /// The command line's `unlock`, `token`, `step-up` and `reveal`: the PIN alone with
    /// `--pin`, `--pin-fd` or a fresh confirmation, the reader `--device` names, `--timeout`,
    /// and a PIN typed while the reader waits where the client has a terminal.
    static func forCommandLine(_ call: Call, _ purpose: Purpose, confirmation: Confirmation? = nil) throws -> UnlockRequest {
        let pinOnly = call.answersFromDescriptor || call.options(for: UnlockOptions.self).pin || confirmation?.fresh == true
        return UnlockRequest(
            purpose: purpose,
            confirmation: confirmation,
            tokens: purpose == .accessToken ? .required : .none,
            pin: pinOnly ? .only : .fallback,
            deviceID: call.deviceID,
            scan: try call.scanSettings(),
            pinWhileScanning: call.request.answersWhileScanning,
            pamPrompt: nil)
    }
}
