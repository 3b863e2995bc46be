import FingersealWire
import FoundationEssentials
import Glibc
import SessionBusKit
import SharedMessages
import SodiumKit
import SystemKit

/// The session agent: org.fingerseal.Agent1 on the user's session bus, a thin client of the
/// broker for applications, like the CLI for terminals. It holds no privilege, store or
/// reader: each call becomes one broker request (the agent's own process is the caller the
/// broker sees), with what the bus says of the application attached as a claim.
///
/// An application's confirmations are kept by the broker under a grant key the agent makes
/// per (application connection, context) and keeps only in memory: EndContext, the
/// application leaving the bus, or the agent's end drops it, and with it the confirmation.
final class Agent {
    let bus: SessionBus
    let socketPath: String
    let settings: AgentSettings
    private var requests: [String: AgentRequest] = [:]
    /// Requests that are over, by path, kept on the bus for `AgentRequest.takeLimit` so a late
    /// Take or Cancel is answered as documented; at most `endedPerApplication` per application
    /// (the oldest goes first), so none can pile them up.
    private var ended: [String: AgentRequest] = [:]
    static let endedPerApplication = 8
    private var grantKeys: [GrantOwner: SecureBytes] = [:]
    /// One watch per application with grants or requests: its departure ends them.
    private var departures: [String: UInt32] = [:]
    private var nextRequest = 1
    private var idleTimer: UInt32 = 0
    /// At most this many requests open per application, and in all.
    static let requestsPerApplication = 4
    static let requestsInAll = 32

    struct GrantOwner: Hashable {
        let busName: String
        let context: String
    }

    init(bus: SessionBus, socketPath: String, settings: AgentSettings) {
        self.bus = bus
        self.socketPath = socketPath
        self.settings = settings
    }

    func export() throws {
        _ = try bus.export(path: AgentInterface.path, introspectionXML: AgentInterface.xml, interface: AgentInterface.name) {
            [weak self] call in
            self?.handle(call)
        }
        scheduleIdleExit()
    }

    // MARK: calls

    private func handle(_ call: MethodCall) {
        switch call.method {
        case "GetCapabilities": capabilities(call)
        case "GetStatus": settingsStatus(call)
        case "SetEnabled":
            guard let enabled = call.arguments.first?.bool else { return call.fail(AgentErrors.invalidArgs, AgentStrings.badOption("enabled")) }
            begin(call, .setEnabled(enabled), options: call.arguments.count > 1 ? call.arguments[1] : nil)
        case "Unlock", "UnlockAndWait":
            begin(call, .unlock, options: call.arguments.first, waits: call.method.hasSuffix("AndWait"))
        case "StepUp", "StepUpAndWait":
            guard let context = call.arguments.first?.string else { return call.fail(AgentErrors.invalidArgs, AgentStrings.badContext) }
            begin(call, .stepUp(context: context), options: call.arguments.count > 2 ? call.arguments[2] : nil,
                  reasonArgument: call.arguments.count > 1 ? call.arguments[1].string ?? "" : "", waits: call.method.hasSuffix("AndWait"))
        case "Reveal", "RevealAndWait":
            guard call.arguments.count > 1, let context = call.arguments[1].string else {
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badContext)
            }
            begin(call, .reveal(context: context), options: call.arguments.count > 2 ? call.arguments[2] : nil,
                  waits: call.method.hasSuffix("AndWait"))
        case "MakeProof": makeProof(call)
        case "EndContext":
            guard let context = call.arguments.first?.string, StepUpRules.isValidContext(context) else {
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badContext)
            }
            endContext(GrantOwner(busName: call.sender, context: context)) { call.reply() }
        case "Get" where call.interface == "org.freedesktop.DBus.Properties":
            call.reply([.variant(.uint32(AgentInterface.version))])
        default:
            call.fail(AgentErrors.unknownMethod, call.method)
        }
    }

    /// Starts one request: the caller identified, its options read, a prompt chosen, the
    /// request object exported (its path is the reply), the broker asked on a thread.
    /// `waits`: the *AndWait form, answered when the request ends instead of with its path.
    private func begin(_ call: MethodCall, _ kind: AgentRequest.Kind, options raw: BusValue?, reasonArgument: String = "",
                       waits: Bool = false) {
        let options: ApplicationOptions
        do { options = try ApplicationOptions(raw) } catch let error as OptionProblem { return call.fail(AgentErrors.invalidArgs, error.sentence) } catch {
            return call.fail(AgentErrors.invalidArgs, AgentStrings.badMethods)
        }
        // StepUp's reason argument, else the reason option: the program's words, plain text only.
        var reason = options.reason
        if !reasonArgument.isEmpty {
            guard let shown = AskingApplication.shownText(reasonArgument) else {
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badOption("reason"))
            }
            reason = shown
        }
        let application: AskingApplication
        do {
            application = try AskingApplication.identify(call.sender, on: bus, claimedName: options.appName)
        } catch AskingApplication.Refusal.otherUser {
            return call.fail(AgentErrors.accessDenied, AgentStrings.otherUser)
        } catch {
            return call.fail(AgentErrors.accessDenied, AgentStrings.unknownCaller)
        }
        let own = requests.values.filter { $0.owner == call.sender }.count
        guard own < Agent.requestsPerApplication, requests.count < Agent.requestsInAll else {
            return call.fail(AgentErrors.failed, AgentStrings.tooManyRequests)
        }
        var context: String? = nil
        var payload: SecureBytes? = nil
        switch kind {
        case .unlock, .setEnabled: break
        case let .stepUp(given), let .reveal(given):
            guard StepUpRules.isValidContext(given) else { return call.fail(AgentErrors.invalidArgs, AgentStrings.badContext) }
            context = given
        }
        if case .reveal = kind {
            switch call.arguments.first {
            case let .handle(index)?:
                guard let fd = call.descriptor(index), let sealed = SecretFile.read(fd, limit: AgentLimits.sealedFile, dropNewline: false)
                else { return call.fail(AgentErrors.invalidArgs, AgentStrings.badSealedFile) }
                payload = sealed
            case let .bytes(bytes)? where bytes.count <= AgentLimits.sealedFile:
                // Ciphertext: no secret, but it goes where the descriptor's bytes would.
                guard let sealed = try? SecureBytes(copying: bytes) else { return call.fail(AgentErrors.failed, AgentStrings.badSealedFile) }
                payload = sealed
            default:
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badSealedFile)
            }
        }
        let prompt: PromptSurface?
        if options.prompt == .dialog {
            let words = DialogWords(kind, application, reason: reason, label: options.label)
            guard let dialog = settings.makeDialog(words, options.parentWindow, passwordAllowed: options.allows(.password)) else {
                return call.fail(AgentErrors.noDisplay, AgentStrings.noDisplay)
            }
            prompt = dialog
        } else {
            prompt = nil
        }
        let path = requestPath(call.sender, token: options.handleToken)
        guard requests[path] == nil else { return call.fail(AgentErrors.invalidArgs, AgentStrings.badOption("handle_token")) }
        // A handle token used again: the earlier request with it is over, and gives way.
        ended.removeValue(forKey: path)?.unexport()
        let grantKey: [UInt8]?
        do { grantKey = try context.map { try key(for: GrantOwner(busName: call.sender, context: $0)) } } catch {
            return call.fail(AgentErrors.failed, AgentStrings.brokerEnded)
        }
        let request: AgentRequest
        do {
            request = try AgentRequest(path: path, owner: call.sender, kind: kind, bus: bus, prompt: prompt,
                                       passwordAllowed: options.allows(.password))
            try request.export()
        } catch {
            prompt?.close()
            return call.fail(AgentErrors.failed, "\(error)")
        }
        requests[path] = request
        watchDeparture(of: call.sender)
        cancelIdleExit()
        request.onClosed = { [weak self, weak request] in
            guard let self else { return }
            self.requests[path] = nil
            if let request { self.keepEnded(request) }
            self.scheduleIdleExit()
        }
        if let dialog = prompt as? DialogPrompt { dialog.attach(request) }
        if waits { request.waiter = call } else { call.reply([.objectPath(path)]) }
        let wire = brokerRequest(kind, application, options, grantKey: grantKey)
        let started = request.start(socketPath: socketPath, request: wire, payload: payload) { [weak self] request, ending in
            self?.finish(request, ending)
        }
        if !started { request.respond(code: 2, outcome: Outcome.systemError.rawValue, sentence: AgentStrings.brokerEnded, method: nil,
                                      expiresAt: nil, secret: nil) }
    }

    /// The request the broker gets: the command, its options, and the application as the
    /// agent's claim (with the grant key for a context).
    private func brokerRequest(_ kind: AgentRequest.Kind, _ application: AskingApplication, _ options: ApplicationOptions,
                               grantKey: [UInt8]?) -> Request {
        var request: Request
        switch kind {
        case .unlock:
            request = Request(.unlock)
            request.options.set(field: Option.printToken.field, "1")
        case let .stepUp(context):
            request = Request(.stepUp)
            request.arguments = [context]
        case .reveal:
            request = Request(.reveal)
            request.options.set(field: Option.noNotice.field, "1")
        case let .setEnabled(on):
            request = Request(on ? .fingerOn : .fingerOff)
        }
        switch kind {
        case .unlock, .setEnabled: break
        case .stepUp, .reveal:
            if let maxAge = options.maxAge { request.options.set(field: Option.maxAge.field, String(maxAge)) }
            if options.fresh, case .stepUp = kind { request.options.set(field: Option.fresh.field, "1") }
        }
        request.wantsEvents = true
        request.answersWhileScanning = true
        request.language = settings.language
        request.timeZone = settings.timeZone
        // The claim as a claim: the broker's sentences put the executable and app id beside it.
        request.origin = .application(Application(busName: application.busName, executable: application.executable,
                                                  appID: application.appID, name: application.claimedName, grantKey: grantKey,
                                                  methods: options.methods))
        return request
    }

    /// The broker's result as the request's Response.
    private func finish(_ request: AgentRequest, _ ending: AgentExchange.Ending) {
        switch ending {
        case let .reply(reply, data, output):
            var secret: SecureBytes? = data
            if let token = reply.token {
                secret = try? SecureBytes(copying: token)
                Wire.wipeStorage(token)
            }
            let code: UInt32 = reply.outcome == .success ? 0 : reply.outcome == .cancelled ? 1 : 2
            // A success's words are the broker's output ("Confirmed with your finger for …").
            let said = reply.message.isEmpty ? String(output.split(separator: "\n").last ?? "") : reply.message
            let sentence = reply.outcome == .cancelled ? AgentStrings.cancelled : said
            request.respond(code: code, outcome: reply.outcome.rawValue, sentence: sentence, method: reply.method,
                            expiresAt: reply.expiresAt, tokenType: reply.tokenType, secret: secret)
        case .unreachable:
            request.respond(code: 2, outcome: Outcome.unavailable.rawValue, sentence: AgentStrings.brokerUnreachable, method: nil,
                            expiresAt: nil, secret: nil)
        case let .broken(cancelled):
            request.respond(code: cancelled ? 1 : 2, outcome: (cancelled ? Outcome.cancelled : Outcome.unavailable).rawValue,
                            sentence: cancelled ? AgentStrings.cancelled : AgentStrings.brokerEnded, method: nil, expiresAt: nil,
                            secret: nil)
        }
    }

    // MARK: request objects

    /// /org/fingerseal/Agent1/request/SENDER/TOKEN (xdg-desktop-portal's shape: a caller that
    /// names its token can watch the path before it calls).
    private func requestPath(_ sender: String, token: String?) -> String {
        let escaped = String(sender.dropFirst(sender.hasPrefix(":") ? 1 : 0)).map { $0.isLetter || $0.isNumber ? String($0) : "_" }.joined()
        let chosen: String
        if let token, !token.isEmpty, token.utf8.count <= 64, token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) {
            chosen = token
        } else {
            chosen = "r\(nextRequest)"
            nextRequest += 1
        }
        return AgentInterface.path + "/request/" + escaped + "/" + chosen
    }

    // MARK: grants

    /// The grant key for an application's context: made on first use, 32 random bytes.
    private func key(for owner: GrantOwner) throws -> [UInt8] {
        if let existing = grantKeys[owner] { return existing.copyBytes() }
        let made = try SecureBytes.random(count: 32)
        grantKeys[owner] = made
        return made.copyBytes()
    }

    /// Ends an application's confirmation for a context at the broker, then forgets its key.
    private func endContext(_ owner: GrantOwner, then: @escaping () -> Void) {
        guard let key = grantKeys.removeValue(forKey: owner) else { return then() }
        var request = Request(.stepUp)
        request.arguments = [owner.context]
        request.options.set(field: Option.end.field, "1")
        request.language = settings.language
        request.timeZone = settings.timeZone
        request.origin = .application(Application(busName: owner.busName, grantKey: key.copyBytes()))
        let exchange = UncheckedExchange(AgentExchange(socketPath: socketPath, request: request, payload: nil, answers: nil,
                                                       note: { _ in }))
        let done = MainOnly(then)
        if !startDetachedThread({
            _ = exchange.exchange.run()
            MainLoop.post { done.value() }
        }) { then() }
        scheduleIdleExit()
    }

    /// An ended request stays on the bus a while (see `ended`), then goes.
    private func keepEnded(_ request: AgentRequest) {
        let path = request.path
        ended[path]?.unexport()
        ended[path] = request
        let own = ended.values.filter { $0.owner == request.owner }
        if own.count > Agent.endedPerApplication, let oldest = own.min(by: { $0.endedAt < $1.endedAt }) {
            ended.removeValue(forKey: oldest.path)?.unexport()
        }
        MainLoop.after(AgentRequest.takeLimit) { [weak self, weak request] in
            guard let self, let request, self.ended[path] === request else { return }
            self.ended.removeValue(forKey: path)?.unexport()
        }
    }

    /// When an application leaves the bus: its requests are cancelled, its confirmations end.
    private func watchDeparture(of busName: String) {
        guard departures[busName] == nil else { return }
        departures[busName] = bus.whenGone(busName) { [weak self] in self?.departed(busName) }
    }

    private func departed(_ busName: String) {
        if let watch = departures.removeValue(forKey: busName) { bus.endWatch(watch) }
        for request in requests.values where request.owner == busName { request.cancel() }
        for request in ended.values where request.owner == busName { ended.removeValue(forKey: request.path)?.unexport() }
        for owner in grantKeys.keys where owner.busName == busName { endContext(owner) {} }
    }

    // MARK: capabilities and status

    /// GetStatus: what a settings page shows (the broker's `status` for the application
    /// channel): the facts, and each as a sentence in the person's language and zone.
    private func settingsStatus(_ call: MethodCall) {
        askStatus(call) { SettingsStatus($0).values }
    }

    private func capabilities(_ call: MethodCall) {
        let display = settings.canShowDialog
        askStatus(call) { Capabilities($0, display: display).values }
    }

    /// The broker's `status --json` for the caller as an application, in the session's
    /// language and zone; `answer` turns it into the reply's dictionary.
    private func askStatus(_ call: MethodCall, _ answer: @escaping @Sendable (AgentExchange.Ending) -> [String: BusValue]) {
        var request = Request(.status)
        request.options.set(field: Option.json.field, "1")
        askBroker(call, request) { ending, call in call.reply([.dictionary(answer(ending))]) }
    }

    /// MakeProof(method, url, options): the broker's `proof` for the caller as an application,
    /// for the access token its session holds. Nothing is asked of the person: without a valid
    /// token, or for a bearer sign-in, the call fails with the broker's sentence.
    private func makeProof(_ call: MethodCall) {
        guard call.arguments.count >= 2, let method = call.arguments[0].string, let url = call.arguments[1].string,
              ProofRequest.isMethod(method), ProofRequest.isURL(url) else {
            return call.fail(AgentErrors.invalidArgs, OptionError.proofNeedsMethodAndURL.message)
        }
        var request = Request(.proof)
        request.arguments = [method, url]
        if call.arguments.count > 2 {
            guard case let .dictionary(options) = call.arguments[2].unboxed else {
                return call.fail(AgentErrors.invalidArgs, AgentStrings.badOption("options"))
            }
            for (name, value) in options {
                guard name == "nonce", let nonce = value.unboxed.string, ProofRequest.isNonce(nonce) else {
                    return call.fail(AgentErrors.invalidArgs, AgentStrings.badOption(name))
                }
                request.options.set(field: Option.nonce.field, nonce)
            }
        }
        askBroker(call, request) { ending, call in
            switch ending {
            case let .reply(reply, _, output) where reply.outcome == .success:
                guard let proof = output.split(separator: "\n").last, !proof.isEmpty else {
                    return call.fail(AgentErrors.failed, AgentStrings.brokerEnded)
                }
                call.reply([.string(String(proof))])
            case let .reply(reply, _, _):
                // A request that is not one (the broker reads the URL further) is the caller's.
                call.fail(reply.outcome == .usage ? AgentErrors.invalidArgs : AgentErrors.failed,
                          reply.message.isEmpty ? AgentStrings.brokerEnded : reply.message)
            case .unreachable:
                call.fail(AgentErrors.failed, AgentStrings.brokerUnreachable)
            case .broken:
                call.fail(AgentErrors.failed, AgentStrings.brokerEnded)
            }
        }
    }

    /// One request that asks the person nothing, for the caller as an application, in the
    /// session's language and zone, on a thread; `answer` replies on the main loop.
    private func askBroker(_ call: MethodCall, _ given: Request,
                           _ answer: @escaping @Sendable (AgentExchange.Ending, MethodCall) -> Void) {
        var request = given
        request.language = settings.language
        request.timeZone = settings.timeZone
        request.origin = .application(Application(busName: call.sender))
        let exchange = UncheckedExchange(AgentExchange(socketPath: socketPath, request: request, payload: nil, answers: nil,
                                                       note: { _ in }))
        let sendable = UncheckedCall(call)
        let started = startDetachedThread {
            let ending = UncheckedEnding(exchange.exchange.run())
            MainLoop.post { answer(ending.ending, sendable.call) }
        }
        if !started { call.fail(AgentErrors.failed, AgentStrings.brokerEnded) }
    }

    // MARK: idle exit

    /// With nothing open and nothing held, the agent ends after a while (D-Bus activation
    /// starts it again on the next call).
    private func scheduleIdleExit() {
        guard requests.isEmpty, grantKeys.isEmpty, let idle = settings.idleExit else { return }
        cancelIdleExit()
        idleTimer = MainLoop.after(idle) { [weak self] in
            guard let self, self.requests.isEmpty, self.grantKeys.isEmpty else { return }
            MainLoop.quit()
        }
    }

    private func cancelIdleExit() {
        MainLoop.cancel(idleTimer)
        idleTimer = 0
    }
}

struct UncheckedCall: @unchecked Sendable {
    let call: MethodCall
    init(_ call: MethodCall) { self.call = call }
}
