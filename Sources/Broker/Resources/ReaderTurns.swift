import FingerprintFlows
import FingersealCore
import FprintdKit
import FprintKit
import Glibc
import ReaderValues
import SystemdKit
import SystemKit

/// The one fingerprint reader: one operation at a time, in turns.
///
/// Who goes next is decided here, once, for every request that wants the reader: a person
/// at a login screen or a sudo prompt for their own account (`.seat`) goes before anything
/// in the background (the command line, a host asking for another account); among equals,
/// the principal served longest ago goes first, then the earliest to ask. A background turn
/// ends at once when a seat request comes (its scan stops, nothing counted); any turn ends
/// when another principal of the same rank has waited `contestedLimit`. So one user's scans,
/// however many, never keep the reader from another user's login for long.
///
/// Two backends (`reader=`): fprintd, which owns the device on desktops (claimed for the
/// request's user and released at its end, so GNOME, KDE and pam_fprintd get it back at
/// once), or libfprint driving the device here (kiosks, rigs). Never both: while fprintd is
/// on the system bus (or can be activated) with `auto`, nothing here opens a USB device.
///
/// A libfprint reader stays open between requests, so a prompt follows a request at once
/// (opening costs a context, an enumeration and the device's own start-up); it is closed
/// after a reader error (unplugged, failed), after `idleLimit` without use, before listing
/// devices (one GLib worker may drive the default main context at a time), when fprintd
/// takes over, and before the computer sleeps (`prepareForSleep`). A reader libfprint saw
/// unplugged since is not used again: the next request enumerates what is connected then,
/// so a reader that comes or goes with a dock is noticed without a restart.
final class ReaderTurns: @unchecked Sendable {
    /// How a request ranks for the reader.
    enum Priority: Int, Comparable {
        /// The command line, or a PAM host asking for another account (su, pkexec).
        case background
        /// A PAM authentication of the person at the seat: a host of the system (login
        /// screens, login) or the account's own (sudo, a lock screen).
        case seat

        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    /// Why a turn was taken away from its request.
    enum Interruption: Sendable {
        /// A request that goes first wants the reader.
        case neededElsewhere
        /// The computer is going to sleep (logind's PrepareForSleep).
        case sleep

        /// What the interrupted request ends with: unavailable (the fallback follows), never
        /// counted against the person.
        var error: FingersealError {
            switch self {
            case .neededElsewhere:
                return FingersealError(.unavailable, Messages.readerNeededElsewhere, detail: "the reader's turn was taken away")
            case .sleep:
                return FingersealError(.unavailable, Messages.scanStoppedForSleep, detail: "the computer is going to sleep")
            }
        }

        /// Whether `error` is what a turn taken away ends with (`ReaderTurns.preemption`):
        /// nothing the person did, so every host is told why, a PAM host too, which otherwise
        /// goes on to the next way in without a word.
        static func ended(_ error: FingersealError) -> Bool {
            [Interruption.neededElsewhere, .sleep].contains { $0.error == error }
        }

        /// The failures a scan reports when it is stopped this way: a reader that suspends
        /// may also say it went away.
        var outcomes: [Outcome] {
            self == .sleep ? [.cancelled, .unavailable, .timedOut, .noReader] : [.cancelled, .unavailable, .timedOut]
        }
    }

    /// One request's turn: the scan watches `stopFD`, which the gate makes readable when the
    /// turn is taken away (`interruption`).
    final class Turn: @unchecked Sendable {
        let id: UInt64
        let priority: Priority
        let principal: Principal
        let arrivedAt: Double
        private let stop: EventFD
        private let lock = ThreadLock()
        private var takenAway: Interruption? = nil
        private var stopSent = false
        /// Why the turn was taken away, or its scan ended by others, once it was (the scan
        /// thread reads it too).
        var interruption: Interruption? { lock.locked { takenAway } }
        /// The turn was taken away, for whatever reason.
        var preempted: Bool { interruption != nil }
        /// Its scan was told to stop.
        fileprivate var stopped: Bool { lock.locked { stopSent } }

        fileprivate init(id: UInt64, priority: Priority, principal: Principal, arrivedAt: Double) throws {
            self.id = id
            self.priority = priority
            self.principal = principal
            self.arrivedAt = arrivedAt
            do { stop = try EventFD() } catch {
                throw FingersealError(.systemError, Messages.systemFailure(.startScan), detail: "\(error)")
            }
        }

        var stopFD: Int32 { stop.rawValue }

        /// Takes the turn away and stops its scan (the first stop's reason stays); with
        /// `stopping` false only notes why the scan will end (fprintd ends it itself).
        fileprivate func interrupt(_ why: Interruption, stopping: Bool = true) {
            let send = lock.locked { () -> Bool in
                guard !stopSent else { return false }
                takenAway = why
                stopSent = stopping
                return stopping
            }
            guard send else { return }
            stop.signal()
        }
    }

    private let condition = ThreadCondition()
    private var holder: Turn? = nil
    private var waiting: [Turn] = []
    private var lastServed: [Principal: Double] = [:]
    private var nextID: UInt64 = 1
    /// Touched only by the holder of a turn.
    private var cached: LibfprintDevice? = nil
    private var bus: SystemBus? = nil
    private var lastUse = monotonicSeconds()
    /// Sleep came or went since the reader was opened: whoever holds the reader next closes
    /// it first (a USB device is reset across sleep). Under the lock.
    private var sleptSinceOpen = false
    /// The holder's scan runs through fprintd, which suspends its device and ends (or keeps)
    /// the scan itself: not stopped twice, only explained. Under the lock.
    private var holderOnFprintd = false
    /// Between PrepareForSleep(true) and (false); `wakes` counts the latter. Under the lock.
    private var asleep = false
    private var wakes = 0
    /// The longest a claim on fprintd's device waits for the computer to wake before it is
    /// released anyway (waking time: the clock stops while the computer sleeps).
    static let wakeLimit = 30.0
    /// The longest a request waits for its turn.
    static let waitLimit = 30.0
    /// A turn ends when another principal of the same rank has waited this long.
    static let contestedLimit = 20.0
    /// An idle reader is closed after this long, leaving the device to others.
    static let idleLimit = 30.0

    /// How `call` ranks, and whom its turn counts against.
    static func rank(_ call: Call) -> (Priority, Principal) {
        let seat = [.pamAuthenticate, .pamIdentify].contains(call.request.command) && call.applicant == nil
        return (seat ? .seat : .background, call.caller.principal)
    }

    /// Waits for a turn: at once when the reader is free and nobody waits, else (saying so)
    /// in the gate's order, at most `waitLimit`.
    private func acquire(_ priority: Priority, _ principal: Principal, _ conversation: Conversation?) throws -> Turn {
        let (turn, waits) = try condition.locked { () throws -> (Turn, Bool) in
            let turn = try Turn(id: nextID, priority: priority, principal: principal, arrivedAt: monotonicSeconds())
            nextID += 1
            if holder == nil && waiting.isEmpty {
                grant(turn)
                return (turn, false)
            }
            waiting.append(turn)
            return (turn, true)
        }
        guard waits else { return turn }
        conversation?.info(Messages.readerBusyWaiting)
        let deadline = turn.arrivedAt + ReaderTurns.waitLimit
        try condition.locked {
            while true {
                let now = monotonicSeconds()
                let wake = preemptIfDue(now)
                if holder == nil, next()?.id == turn.id {
                    waiting.removeAll { $0.id == turn.id }
                    grant(turn)
                    return
                }
                if now >= deadline {
                    waiting.removeAll { $0.id == turn.id }
                    condition.broadcast()
                    throw FingersealError(.unavailable, Messages.readerBusy)
                }
                condition.wait(until: min(deadline, wake ?? deadline))
            }
        }
        return turn
    }

    /// A turn granted at once when the reader is free and nobody waits (the gate's own look
    /// at the reader: no request's turn); nil otherwise.
    private func idleTurn(_ principal: Principal) -> Turn? {
        condition.locked {
            guard holder == nil && waiting.isEmpty,
                  let turn = try? Turn(id: nextID, priority: .background, principal: principal, arrivedAt: monotonicSeconds()) else {
                return nil
            }
            nextID += 1
            grant(turn)
            return turn
        }
    }

    /// Under the lock.
    private func grant(_ turn: Turn) { holder = turn }

    /// The waiting turn that goes next: the highest rank, then the principal served longest
    /// ago (or never), then the earliest. Under the lock.
    private func next() -> Turn? {
        waiting.min { a, b in
            if a.priority != b.priority { return a.priority > b.priority }
            let servedA = lastServed[a.principal] ?? -Double.infinity, servedB = lastServed[b.principal] ?? -Double.infinity
            if servedA != servedB { return servedA < servedB }
            return a.arrivedAt < b.arrivedAt
        }
    }

    /// Takes the reader away from its holder when a seat request waits behind a background
    /// turn (even the same user's), or another principal of the same rank has waited
    /// `contestedLimit`. Returns when to look again (nil: nothing due later). Under the lock.
    private func preemptIfDue(_ now: Double) -> Double? {
        guard let holder, !holder.stopped else { return nil }
        var soonest: Double? = nil
        for turn in waiting where turn.priority > holder.priority
            || (turn.priority == holder.priority && turn.principal != holder.principal) {
            let due = turn.priority > holder.priority ? now : turn.arrivedAt + ReaderTurns.contestedLimit
            if due <= now {
                holder.interrupt(.neededElsewhere)
                Syslog.log(.notice, "fingersealed: the reader's turn of \(holder.principal) ends: \(turn.principal) is waiting")
                return nil
            }
            soonest = min(soonest ?? due, due)
        }
        return soonest
    }

    /// Ends `turn`; `served`: it was a request's turn (the gate's own look at the reader is
    /// nobody's turn in the order, and no use of the reader).
    private func release(_ turn: Turn, served: Bool = true) {
        condition.locked {
            if holder?.id == turn.id {
                holder = nil
                holderOnFprintd = false
            }
            if served {
                lastServed[turn.principal] = monotonicSeconds()
                lastUse = monotonicSeconds()
            }
            condition.broadcast()
        }
    }

    /// A scan that ended because its turn was taken away says so (the person can try again,
    /// or use the PIN or password); nothing of it was counted.
    static func preemption(_ error: FingersealError, _ turn: Turn) -> FingersealError {
        guard let why = turn.interruption, why.outcomes.contains(error.outcome) else { return error }
        return why.error
    }

    /// logind's PrepareForSleep: `sleeping` before the computer sleeps, false after it woke.
    /// Before sleep, a scan in progress ends as a cancel (nothing counted); either way the
    /// libfprint reader is closed, now when nobody holds it, else by its holder as the turn
    /// ends, and the next request opens it afresh. fprintd suspends and resumes its own
    /// device and ends a scan on it itself: the broker then only says why the scan ended.
    func prepareForSleep(_ sleeping: Bool) {
        let free = condition.locked { () -> Bool in
            sleptSinceOpen = true
            asleep = sleeping
            if !sleeping {
                wakes += 1
                condition.broadcast()
            }
            if sleeping, let holder { holder.interrupt(.sleep, stopping: !holderOnFprintd) }
            return holder == nil
        }
        Syslog.log(.notice, sleeping ? "fingersealed: the computer is going to sleep; the reader is closed"
                                     : "fingersealed: the computer woke; the reader is opened afresh at the next request")
        guard free, let turn = idleTurn(.system) else { return }
        defer { release(turn, served: false) }
        closeIfSlept()
    }

    /// Closes the reader when sleep came or went since it was opened. Holder only.
    private func closeIfSlept() {
        guard condition.locked({ () -> Bool in
            defer { sleptSinceOpen = false }
            return sleptSinceOpen
        }) else { return }
        closeCached()
    }

    /// The system bus, kept open between requests; nil when there is none. Holder only.
    private func systemBus() -> SystemBus? {
        if let bus { return bus }
        bus = ReaderTurns.openSystemBus()
        return bus
    }

    /// A new connection to the system bus; nil at once where there is none (kiosks and rigs
    /// without D-Bus: no socket, no address), without asking sd-bus.
    static func openSystemBus() -> SystemBus? {
        guard getenv("DBUS_SYSTEM_BUS_ADDRESS") != nil || access("/run/dbus/system_bus_socket", F_OK) == 0 else { return nil }
        return try? SystemBus.open()
    }

    /// The backend `choice` comes to now. Holder only.
    private func backend(_ choice: ReaderBackendChoice) -> ReaderBackendChoice {
        switch choice {
        case .fprintd, .libfprint: return choice
        case .auto:
            guard let bus = systemBus() else { return .libfprint }
            return bus.fprintdPresence() == .absent ? .libfprint : .fprintd
        }
    }

    /// Lends the reader to `body` for `call`'s user, in `call`'s turn: fprintd's device
    /// claimed for them, or the libfprint reader (`deviceID`, or the first), opened when
    /// needed. With the lid closed and the reader built in, fails at once with `.noReader`;
    /// from a remote session (unless `allow_remote`), with `.remoteSession`. `body`'s scans
    /// watch the turn's `stopFD`.
    func withReader<T>(_ call: Call, deviceID: String? = nil, _ body: (ReaderBackend, Turn) throws -> T) throws -> T {
        try refuseRemote(call)
        let (priority, principal) = ReaderTurns.rank(call)
        let turn = try acquire(priority, principal, call.conversation)
        defer {
            // A reader that slept during the turn is not kept for the next request.
            closeIfSlept()
            release(turn)
        }
        do {
            return try withBackend(call, deviceID: deviceID) { try body($0, turn) }
        } catch let error as FingersealError {
            throw ReaderTurns.preemption(error, turn)
        }
    }

    private func withBackend<T>(_ call: Call, deviceID: String?, _ body: (ReaderBackend) throws -> T) throws -> T {
        let backend = backend(call.options.reader)
        try checkLid(call.options, backend: backend)
        if backend == .fprintd {
            closeCached()
            condition.locked { holderOnFprintd = true }
            return try withFprintd(call, body)
        }
        closeIfSlept()
        // Unplugged since (a dock, a USB reader pulled out): whatever is connected now instead.
        if let cached, cached.isRemoved() { closeCached() }
        let reader: LibfprintDevice
        if let cached, deviceID == nil || cached.info.deviceID == deviceID {
            reader = cached
        } else {
            closeCached()
            reader = try Fingerprint.openReader(deviceID: deviceID)
        }
        do {
            let result = try body(.libfprint(reader))
            cached = reader
            return result
        } catch let error as FingersealError where !ReaderTurns.readerFailures.contains(error.outcome) {
            // A failed match, a timeout or a cancel leave the reader fine.
            cached = reader
            throw error
        } catch {
            reader.close()
            cached = nil
            throw error
        }
    }

    /// A remote session (logind's, or a PAM host's remote host) never drives the reader unless
    /// `allow_remote`: the person is not at it.
    func refuseRemote(_ call: Call) throws {
        if call.isRemote && !call.options.allowRemote { throw FingersealError(.remoteSession, Messages.readerNotFromRemote) }
    }

    /// Whether a reader is there to scan with, asked before a question that is only worth
    /// answering with one (enroll's PIN): only when the reader is free, and for no longer
    /// than opening it takes; nil when it cannot tell now (another request has it).
    func readerPresent(_ call: Call, deviceID: String? = nil) -> Bool? {
        switch readerState(call, deviceID: deviceID) {
        case .present: return true
        case .absent, .lidClosed: return false
        case .unknown: return nil
        }
    }

    /// What `readerState` found.
    enum ReaderState: String {
        case present, absent
        case lidClosed = "lid-closed"
        /// Another request holds it, or it could not be asked now.
        case unknown
    }

    /// Whether a reader is there to scan with, and if not, whether a closed lid is why; asked
    /// only when the reader is free, and for no longer than opening it takes.
    func readerState(_ call: Call, deviceID: String? = nil) -> ReaderState {
        guard let turn = idleTurn(call.caller.principal) else { return .unknown }
        defer { release(turn, served: false) }
        do {
            return try withBackend(call, deviceID: deviceID) { _ in .present }
        } catch let error as FingersealError where error.outcome == .noReader {
            return error.message == Messages.lidClosed ? .lidClosed : .absent
        } catch {
            return .unknown
        }
    }

    /// Outcomes after which the reader (or the bus) is not trusted for the next request.
    private static let readerFailures: [Outcome] = [.noReader, .unavailable, .systemError]

    /// fprintd's default device, claimed for the user for the length of `body`.
    private func withFprintd<T>(_ call: Call, _ body: (ReaderBackend) throws -> T) throws -> T {
        guard let bus = systemBus() else { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
        let user = call.account.name
        let device: FprintdDevice
        do throws(FprintError) {
            device = try bus.fprintdDefaultDevice()
            try device.claim(user: user)
        } catch {
            // No fprintd on the bus (reader=fprintd without it), or the bus itself broke.
            if case let .other(domain, _, _) = error, domain == "dbus" {
                self.bus = nil
                throw FingersealError(.unavailable, Messages.fprintdUnavailable, detail: "\(error)")
            }
            throw Fingerprint.translate(error)
        }
        defer { releaseAwake(device, bus: bus) }
        do {
            return try body(.fprintd(device, user: user, storage: call.options.fprintdStorage))
        } catch let error as FingersealError where error.outcome == .systemError {
            self.bus = nil
            throw error
        }
    }

    /// Releases fprintd's device once the computer is awake. fprintd cannot close a suspended
    /// device, and its Release then leaves the device open for good: every Claim after fails
    /// ("already been opened") until fprintd restarts. A scan that failed may have been
    /// ended by the sleep (with an error or an outcome), whether or not PrepareForSleep reached
    /// the broker yet: logind's PreparingForSleep says. Waits at most `wakeLimit` of waking
    /// time. Holder only.
    private func releaseAwake(_ device: FprintdDevice, bus: SystemBus) {
        let (sleeping, seen) = condition.locked { (asleep, wakes) }
        if sleeping || bus.preparingForSleep() == true {
            let deadline = monotonicSeconds() + ReaderTurns.wakeLimit
            condition.locked {
                while wakes == seen && monotonicSeconds() < deadline { condition.wait(until: deadline) }
            }
        }
        device.release()
    }

    /// The fingers enrolled for `call`'s user where they are kept: fprintd's set when fprintd is
    /// the backend, the vault's own otherwise. Outside the reader's turn, as `fprintdSet`.
    func enrolledFingers(_ call: Call, vault: UnlockedVault) throws -> [String] {
        try fprintdSet(call)?.fingers ?? vault.enrolledFingers()
    }

    /// fprintd's enrolled set for `call`'s user, when fprintd is the backend; nil otherwise.
    /// Outside the reader's turn, on a connection of its own: listing needs no claim, and
    /// `status` must not wait for a scan to end.
    func fprintdSet(_ call: Call) throws -> FprintdSet? {
        let choice = call.options.reader
        guard choice != .libfprint else { return nil }
        guard let bus = ReaderTurns.openSystemBus() else {
            if choice == .fprintd { throw FingersealError(.unavailable, Messages.fprintdUnavailable) }
            return nil
        }
        if choice == .auto && bus.fprintdPresence() == .absent { return nil }
        let device: FprintdDevice
        do throws(FprintError) { device = try bus.fprintdDefaultDevice() } catch { throw Fingerprint.translate(error) }
        return try FprintdEnrolledSet.read(device, user: call.account.name, storage: call.options.fprintdStorage)
    }

    /// The scan is skipped at once while the lid is closed over a built-in reader (an
    /// external one is still used).
    private func checkLid(_ options: Options, backend: ReaderBackendChoice) throws {
        guard options.readerLocation != .external, LidState.closed(bus: systemBus()) == true else { return }
        if options.readerLocation == .auto && ReaderPlacement.hasExternalReader() { return }
        throw FingersealError(.noReader, Messages.lidClosed)
    }

    /// Runs `body` in `call`'s turn with the libfprint reader closed (listing devices, the
    /// self-test). Gives the backend the options come to.
    func whileHeld<T>(_ call: Call, _ body: (ReaderBackendChoice, SystemBus?, Turn) throws -> T) throws -> T {
        try refuseRemote(call)
        let (priority, principal) = ReaderTurns.rank(call)
        let turn = try acquire(priority, principal, nil)
        defer { release(turn) }
        closeCached()
        let backend = backend(call.options.reader)
        do {
            return try body(backend, backend == .fprintd ? systemBus() : nil, turn)
        } catch let error as FingersealError {
            throw ReaderTurns.preemption(error, turn)
        }
    }

    private func closeCached() {
        cached?.close()
        cached = nil
    }

    /// Closes the reader when nobody used it for `seconds` (the accept loop calls this; 0 on
    /// the way out). A reader in use, or wanted, is left alone.
    func closeIfIdle(after seconds: Double) {
        guard let turn = idleTurn(.system) else { return }
        defer { release(turn, served: false) }
        if cached != nil && condition.locked({ monotonicSeconds() - lastUse >= seconds }) { closeCached() }
    }
}
