import FingersealCore
import PAMKit

/// One call into the module: its options and its PAM handle.
struct ModuleCall {
    let pam: PAMHandle
    let arguments: [String]

    init(pam: PAMHandle, argc: Int32, argv: PAMArguments) {
        self.pam = pam
        var arguments: [String] = []
        if let argv, argc > 0 {
            for index in 0..<Int(argc) {
                if let argument = argv[index] { arguments.append(String(cString: argument)) }
            }
        }
        self.arguments = arguments
    }

    func authenticate() -> Outcome {
        var options: Options
        do {
            let (fromFile, fileWarnings) = try Options.loadSystem()
            options = fromFile
            for warning in fileWarnings + (try options.apply(arguments, source: "module arguments")) {
                pam.log(.warning, warning)
            }
        } catch let error as FingersealError {
            pam.log(.error, "configuration: \(error.message)")
            return error.outcome
        } catch {
            return .badConfiguration
        }
        let user = pam.user() ?? "(unknown)"
        let service = pam.item(.service) ?? "(unknown)"
        if options.debug { pam.log(.debug, "user=\(user) service=\(service): fingerprint unlock is not available yet") }
        return .unavailable
    }
}
