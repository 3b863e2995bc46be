import CPAM
import Glibc

/// An application-side PAM transaction (`pam_start` or `pam_start_confdir` … `pam_end`):
/// tests and benchmarks run a real PAM stack from a private service directory with it, and
/// the broker checks an account password through its own service (`fingerseal-verify`).
public final class PAMClient {
    public enum Message: Equatable, Sendable {
        case promptEchoOff(String), promptEchoOn(String), errorMessage(String), textInfo(String)
    }

    /// Answers one message; nil means "no answer" (PAM_CONV_ERR for prompts).
    public typealias Responder = (Message) -> String?

    /// What a conversation gives back for one message.
    public enum Response {
        /// No answer (for a message; a prompt left without one).
        case none
        case text(String)
        /// A secret answer in memory from `malloc`, NUL-terminated: PAM takes it over and
        /// frees it (modules wipe it first), so it is never copied into a Swift String.
        case owned(UnsafeMutablePointer<CChar>)
        /// Ends the conversation: the module gets PAM_CONV_ERR (a cancel, a client gone).
        case abort
    }

    /// Answers one message of the conversation.
    public typealias Converser = (Message) -> Response

    private final class ConversationBox {
        let converse: Converser
        init(_ converse: @escaping Converser) { self.converse = converse }
    }

    private let handle: OpaquePointer
    private let box: ConversationBox
    private var conversation: pam_conv
    private var lastStatus: Int32 = PAM_SUCCESS

    public struct StartError: Error, Equatable { public let code: Int32 }

    public convenience init(service: String, user: String, configDirectory: String, respond: @escaping Responder) throws {
        try self.init(service: service, user: user, configDirectory: configDirectory, box: ConversationBox { message in
            respond(message).map { .text($0) } ?? .none
        })
    }

    /// Starts a transaction for `service` from `configDirectory`, or from the system's
    /// configuration (/etc/pam.d) when it is nil; `converse` answers its conversation.
    /// `user` nil: the transaction starts with no user name (a login screen before anyone
    /// typed one).
    public static func start(service: String, user: String?, configDirectory: String? = nil,
                             converse: @escaping Converser) throws -> PAMClient {
        try PAMClient(service: service, user: user, configDirectory: configDirectory, box: ConversationBox(converse))
    }

    private init(service: String, user: String?, configDirectory: String?, box: ConversationBox) throws {
        self.box = box
        conversation = pam_conv(conv: PAMClient.converse, appdata_ptr: Unmanaged.passUnretained(box).toOpaque())
        var raw: OpaquePointer? = nil
        let rc: Int32
        if let configDirectory {
            rc = pam_start_confdir(service, user, &conversation, configDirectory, &raw)
        } else {
            rc = pam_start(service, user, &conversation, &raw)
        }
        guard rc == PAM_SUCCESS, let raw else { throw StartError(code: rc) }
        handle = raw
    }

    deinit {
        _ = pam_end(handle, lastStatus)
    }

    public func authenticate(flags: Int32 = 0) -> Int32 { record(pam_authenticate(handle, flags)) }
    public func accountManagement(flags: Int32 = 0) -> Int32 { record(pam_acct_mgmt(handle, flags)) }
    public func setCredentials(flags: Int32 = Int32(PAM_ESTABLISH_CRED)) -> Int32 { record(pam_setcred(handle, flags)) }
    public func openSession(flags: Int32 = 0) -> Int32 { record(pam_open_session(handle, flags)) }
    public func closeSession(flags: Int32 = 0) -> Int32 { record(pam_close_session(handle, flags)) }
    public func changeAuthtok(flags: Int32 = 0) -> Int32 { record(pam_chauthtok(handle, flags)) }

    /// Sets a variable in the PAM environment (pam_putenv).
    public func setEnvironment(_ name: String, _ value: String) -> Int32 {
        pam_putenv(handle, "\(name)=\(value)")
    }

    /// PAM_USER as the stack left it (what a login host would sign in).
    public func user() -> String? {
        var value: UnsafeRawPointer? = nil
        guard pam_get_item(handle, PAM_USER, &value) == PAM_SUCCESS, let value else { return nil }
        return String(cString: value.assumingMemoryBound(to: CChar.self))
    }

    public func setItem(_ item: PAMHandle.Item, _ value: String) -> Int32 {
        record(pam_set_item(handle, item.code, value))
    }

    public static func describe(_ code: Int32) -> String {
        guard let text = pam_strerror(nil, code) else { return "PAM error \(code)" }
        return String(cString: text)
    }

    private func record(_ status: Int32) -> Int32 {
        lastStatus = status
        return status
    }

    /// PAM's conversation callback: a C-convention trampoline back into the Swift closure.
    private static let converse: @convention(c) (
        Int32, UnsafeMutablePointer<UnsafePointer<pam_message>?>?,
        UnsafeMutablePointer<UnsafeMutablePointer<pam_response>?>?, UnsafeMutableRawPointer?
    ) -> Int32 = { count, messages, responses, appdata in
        guard count > 0, let messages, let responses, let appdata else { return PAM_CONV_ERR }
        let box = Unmanaged<ConversationBox>.fromOpaque(appdata).takeUnretainedValue()
        guard let replies = calloc(Int(count), MemoryLayout<pam_response>.stride)?
            .bindMemory(to: pam_response.self, capacity: Int(count)) else { return PAM_BUF_ERR }
        for index in 0..<Int(count) {
            guard let message = messages[index]?.pointee else { continue }
            let text = message.msg.map { String(cString: $0) } ?? ""
            let kind: Message
            switch message.msg_style {
            case PAM_PROMPT_ECHO_OFF: kind = .promptEchoOff(text)
            case PAM_PROMPT_ECHO_ON: kind = .promptEchoOn(text)
            case PAM_ERROR_MSG: kind = .errorMessage(text)
            default: kind = .textInfo(text)
            }
            let answer: UnsafeMutablePointer<CChar>?
            switch box.converse(kind) {
            case .none: answer = nil
            case let .text(text): answer = strdup(text)
            case let .owned(pointer): answer = pointer
            case .abort:
                // Nothing handed back: wipe and free what was answered so far.
                for done in 0..<index {
                    if let text = replies[done].resp {
                        explicit_bzero(text, strlen(text))
                        free(text)
                    }
                }
                free(replies)
                return PAM_CONV_ERR
            }
            replies[index] = pam_response(resp: answer, resp_retcode: 0)
        }
        responses.pointee = replies
        return PAM_SUCCESS
    }
}
