import SystemKit

/// What one client (the PAM module, the CLI) does with the broker's messages; the loop in
/// `ClientConversation` does the rest: the bounded waits, the cancel, the answers' packets, the end.
/// A generic parameter, never an existential: the PAM module builds this in Embedded Swift.
public protocol ConversationClient {
    /// The descriptor to watch for the person's cancel (a signalfd for Ctrl-C) while the loop
    /// waits for the broker, and only then; nil, none.
    mutating func watchForCancel() -> Int32?
    /// Ends that watch: true when the person cancelled meanwhile (consumed).
    mutating func cancelRequested() -> Bool
    /// A message that is neither a question nor the result. False when the client cannot go on
    /// (a host that ended its conversation, an output it cannot write): the loop cancels.
    mutating func show(_ message: BrokerMessage) -> Bool
    /// The answer to `ask`, which may take the person a while (not asked after a cancel: the
    /// loop answers a skip). The client may wait for the broker meanwhile through
    /// `conversation.next(self)`.
    mutating func answer(_ ask: Ask, _ conversation: inout ClientConversation) -> ClientConversation.Response
}

/// The bounds of a client that waits with a person for as long as the broker asks (the CLI,
/// the session agent); the PAM module keeps shorter ones of its own (`BrokerExchange`).
public enum PersonClientLimits {
    public static let connect = 2.0
    /// Between two messages of the broker (which bounds scans and IdP requests itself).
    public static let message = 600.0
    /// After a cancel, how long the broker has to send its result.
    public static let cancel = 5.0
    public static let send = 10.0
    /// A payload's chunk: it and its fields fit a packet (`Wire.maxPacket`, 64 KiB).
    public static let chunk = 60 * 1024
}

/// The one client conversation loop, for the module, the CLI and the agent (design §2:
/// bounded waits on both sides; only a `result` ends the request with the broker's outcome).
public struct ClientConversation {
    public let connection: WireConnection
    /// The longest wait between two messages of the broker.
    public let messageWait: Double
    /// How long the broker has, after a cancel, to send its result.
    public let cancelWait: Double
    /// When the cancel was sent; nil while none was.
    public private(set) var cancelledAt: Double? = nil

    public init(_ connection: WireConnection, messageWait: Double, cancelWait: Double) {
        self.connection = connection
        self.messageWait = messageWait
        self.cancelWait = cancelWait
    }

    /// A conversation with `PersonClientLimits`'s waits.
    public init(withPerson connection: WireConnection) {
        self.init(connection, messageWait: PersonClientLimits.message, cancelWait: PersonClientLimits.cancel)
    }

    public var cancelled: Bool { cancelledAt != nil }

    /// How a question was answered.
    public enum Response {
        /// The answer's packet (the loop sends it, then wipes it).
        case packet([UInt8])
        /// Nobody answers (the host ended its conversation, no terminal, Ctrl-C at the prompt).
        case cancel
        /// The broker withdrew the question while the person was typing: its next message.
        case withdrawn(BrokerMessage)
        /// The conversation ended while the person was typing.
        case ended(End)
    }

    /// How the conversation ended.
    public enum End {
        /// What the broker decided.
        case result(Reply)
        /// The connection broke before a result (after a cancel or not).
        case broken(ConnectionError, cancelled: Bool)
        /// A second cancel, or one that could not be sent: the person does not want to wait.
        case abandoned
    }

    /// One wait for the broker.
    public enum Next {
        case message(BrokerMessage)
        /// Nothing to handle (a cancel came and was sent): wait again.
        case none
        case ended(End)
    }

    /// Relays the broker's messages to `client` until the conversation ends.
    public mutating func run<C: ConversationClient>(_ client: inout C) -> End {
        var pending: BrokerMessage? = nil
        while true {
            let message: BrokerMessage
            if let next = pending {
                message = next
                pending = nil
            } else {
                switch next(&client) {
                case let .message(next): message = next
                case .none: continue
                case let .ended(end): return end
                }
            }
            switch message {
            case let .result(reply):
                return .result(reply)
            case let .ask(ask):
                let response: Response = cancelled ? .packet(ClientMessage.answer(Answer(.skip)).encoded()) : client.answer(ask, &self)
                switch response {
                case var .packet(packet):
                    defer { Wire.wipe(&packet) }
                    do {
                        try connection.send(packet, until: monotonicSeconds() + messageWait)
                    } catch {
                        // The broker may have ended meanwhile (the finger matched while the
                        // person typed); its result is still there to read.
                        if let reply = leftResult() { return .result(reply) }
                        return .broken(error, cancelled: cancelled)
                    }
                case .cancel:
                    guard cancel() else { return .abandoned }
                case let .withdrawn(next):
                    pending = next
                case let .ended(end):
                    return end
                }
            default:
                if !client.show(message) && !cancel() { return .abandoned }
            }
        }
    }

    /// The broker's next message, within the message bound (the cancel's once cancelled), with
    /// the client's cancel watched meanwhile: a first one is sent to the broker (its result
    /// follows), a second one abandons the request.
    public mutating func next<C: ConversationClient>(_ client: inout C) -> Next {
        let deadline = cancelledAt.map { $0 + cancelWait } ?? monotonicSeconds() + messageWait
        let watched = client.watchForCancel()
        let incoming: WireConnection.Incoming<BrokerMessage>?
        let failure: ConnectionError?
        do {
            incoming = try connection.receive(until: deadline, alsoWatching: watched.map { [$0] } ?? [], BrokerMessage.decode)
            failure = nil
        } catch {
            incoming = nil
            failure = error
        }
        if client.cancelRequested() {
            if cancelled || !cancel() { return .ended(.abandoned) }
        }
        if let failure { return .ended(.broken(failure, cancelled: cancelled)) }
        if case let .message(message)? = incoming { return .message(message) }
        return .none
    }

    /// What the broker said while a question is open and the person is still answering it (the
    /// client was woken by the connection): nil to go on waiting for the answer, after
    /// `showing` a sentence or an event; otherwise how the question ends: withdrawn by another
    /// message (a match while the PIN was typed, a new question), the conversation's end, or,
    /// once the person's cancel was sent, an empty answer.
    public mutating func whileAnswering<C: ConversationClient>(_ client: inout C, showing: (BrokerMessage) -> Void) -> Response? {
        switch next(&client) {
        case .none:
            return cancelled ? .packet(ClientMessage.answer(Answer(.skip)).encoded()) : nil
        case let .ended(end):
            return .ended(end)
        case let .message(message):
            switch message {
            case .info, .error, .event:
                showing(message)
                return nil
            default:
                return .withdrawn(message)
            }
        }
    }

    /// Tells the broker to stop; its result is then due within `cancelWait`. False when the
    /// broker could not be told. A second call does nothing more.
    public mutating func cancel() -> Bool {
        guard cancelledAt == nil else { return true }
        cancelledAt = monotonicSeconds()
        do {
            try connection.send(ClientMessage.cancel.encoded(), until: monotonicSeconds() + cancelWait)
        } catch {
            return false
        }
        return true
    }

    /// A result the broker sent before it hung up, if one is waiting to be read.
    public func leftResult() -> Reply? {
        while true {
            let next: WireConnection.Incoming<BrokerMessage>
            do { next = try connection.receive(until: monotonicSeconds() + 0.2, BrokerMessage.decode) } catch { return nil }
            if case let .message(.result(reply)) = next { return reply }
        }
    }
}
