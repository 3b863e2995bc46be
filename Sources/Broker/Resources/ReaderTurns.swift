import FingersealCore
import FingersealWire
import FprintKit
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

    let condition = ThreadCondition()
    private var holder: Turn? = nil
    private var waiting: [Turn] = []
    private var lastServed: [Principal: Double] = [:]
    private var nextID: UInt64 = 1
    // The backends' state (ReaderBackends.swift), with `condition` and `acquire`, `idleTurn`
    // and `release`: internal, not private, for that file.
    /// Touched only by the holder of a turn.
    var cached: LibfprintDevice? = nil
    var bus: SystemBus? = nil
    var lastUse = monotonicSeconds()
    /// Sleep came or went since the reader was opened: whoever holds the reader next closes
    /// it first (a USB device is reset across sleep). Under the lock.
    var sleptSinceOpen = false
    /// The holder's scan runs through fprintd, which suspends its device and ends (or keeps)
    /// the scan itself: not stopped twice, only explained. Under the lock.
    var holderOnFprintd = false
    /// Between PrepareForSleep(true) and (false); `wakes` counts the latter. Under the lock.
    var asleep = false
    var wakes = 0
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
    func acquire(_ priority: Priority, _ principal: Principal, _ conversation: Conversation?) throws -> Turn {
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
    func idleTurn(_ principal: Principal) -> Turn? {
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
    func release(_ turn: Turn, served: Bool = true) {
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
}
