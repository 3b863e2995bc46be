import FingersealWire
import PAMKit

// The PAM entry points, and nothing else: the broker decides every outcome, ModuleCall asks it
// and relays the conversation, and every PAM code comes from `Outcome.pamReturn`. Nothing here
// may crash or block the host.

public typealias PAMArguments = UnsafeMutablePointer<UnsafePointer<CChar>?>?

/// One call into the module: its handle and arguments, to the ModuleCall method that asks.
private func dispatch(_ raw: OpaquePointer?, _ argc: Int32, _ argv: PAMArguments,
                      _ decide: (ModuleCall) -> Outcome) -> Int32 {
    guard let pam = PAMHandle(raw) else { return Outcome.systemError.pamReturn.rawValue }
    return decide(ModuleCall(pam: pam, argc: argc, argv: argv)).pamReturn.rawValue
}

@_cdecl("pam_sm_authenticate")
public func pam_sm_authenticate(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    dispatch(raw, argc, argv) { $0.authenticate() }
}

@_cdecl("pam_sm_setcred")
public func pam_sm_setcred(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    // No credentials of our own to establish; the session's token is the broker's, in open_session.
    // (The password is gone by now: libpam wipes PAM_AUTHTOK when pam_authenticate returns,
    // which is why the `password_used` line takes it during authentication.)
    Outcome.success.pamReturn.rawValue
}

@_cdecl("pam_sm_chauthtok")
public func pam_sm_chauthtok(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    dispatch(raw, argc, argv) { $0.passwordChanged(updating: PAMFlags.updatesAuthtok(flags)) }
}

@_cdecl("pam_sm_acct_mgmt")
public func pam_sm_acct_mgmt(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    dispatch(raw, argc, argv) { $0.accountManagement() }
}

@_cdecl("pam_sm_open_session")
public func pam_sm_open_session(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    dispatch(raw, argc, argv) { $0.openSession() }
}

@_cdecl("pam_sm_close_session")
public func pam_sm_close_session(_ raw: OpaquePointer?, _ flags: Int32, _ argc: Int32, _ argv: PAMArguments) -> Int32 {
    dispatch(raw, argc, argv) { $0.closeSession() }
}
