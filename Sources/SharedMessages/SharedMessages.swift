import Localization

/// The sentences both ends say, written once: the CLI (which has no core) and the broker's
/// table (`Messages` in the core) read them from here, so a file that cannot be written or a
/// cancelled request reads the same whichever end finds it.
public enum SharedMessages {
    public static var cancelled: String { tr("Cancelled.") }
    public static var secureMemory: String { tr("Fingerseal could not allocate protected memory for secrets.") }
    public static var noTerminal: String { tr("No terminal to read from. Use --pin-fd to pass the PIN from a file descriptor.") }
    /// The broker closed the connection before its result: the CLI and the agent say the same.
    public static var serviceEnded: String { tr("The fingerseal service ended the request without an answer. Try again; the system log may say why.") }
    public static var fixClock: String { tr("Set the clock, for example with: timedatectl set-ntp true") }

    public static func cannotRead(_ path: String) -> String { tr("Cannot read %1$s.", path) }
    public static func cannotWrite(_ path: String, _ why: String) -> String { tr("Cannot write %1$s: %2$s.", path, embedded(why)) }
    public static func cannotRun(_ command: String, _ why: String) -> String { tr("Cannot run %1$s: %2$s.", command, embedded(why)) }
    public static func tooLargeToSeal(limitMiB: Int) -> String { tr("This is too large to seal; the limit is %1$s MiB.", limitMiB) }

    /// Text from elsewhere (libfprint, a system call, an identity provider) as it goes inside
    /// one of our sentences: without its own closing period, so the sentence ends with one
    /// (never "timed out..").
    public static func embedded(_ text: String) -> String {
        var end = text.endIndex
        while end > text.startIndex, [".", " ", "\n", "\t"].contains(text[text.index(before: end)]) {
            end = text.index(before: end)
        }
        return String(text[..<end])
    }
}
