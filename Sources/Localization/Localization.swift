import CLinux
import Glibc
import SystemKit
import ZoneInfo

/// Sentences in the person's language, through glibc's gettext (domain `fingerseal`).
///
/// The language is the calling thread's own locale (`uselocale`), never the process's
/// (`setlocale`, `setenv`): the broker serves many people at once, one per thread, each in the
/// language their request named. A thread that never chose a language speaks English (the
/// catalog's message ids).
///
/// Placeholders are positional, `%1$s`, `%2$s`, … (c-format, so `msgfmt --check` verifies
/// that a translation uses the same ones), always `s`: every argument arrives as a string.
/// A translation may put them in any order. `%%` is a percent sign. See po/README.
public enum Localization {
    public static let domain = "fingerseal"

    /// Where the catalogs are looked up (`<directory>/nb/LC_MESSAGES/fingerseal.mo`).
    nonisolated(unsafe) public private(set) static var directory = "/usr/share/locale"

    /// Binds the domain to `directory`. Called once at start-up, before any thread is started.
    public static func bind(directory: String) {
        self.directory = directory
        _ = bindtextdomain(domain, directory)
        // Always UTF-8, whatever the chosen locale's codeset.
        _ = bind_textdomain_codeset(domain, "UTF-8")
    }

    /// The catalogs of a program installed as `executable`: PREFIX/share/locale for
    /// PREFIX/bin/fingerseal and PREFIX/libexec/fingerseal/fingersealed; for a program run
    /// from a build tree (TREE/.build/…/debug/fingerseal-agent), the catalogs `make` builds
    /// there (TREE/.build/locale); `FINGERSEAL_LOCALEDIR` wins. Only where sentences come from,
    /// never an outcome.
    public static func installedDirectory(executable: String, environment: String? = nil) -> String {
        if let environment, environment.hasPrefix("/") { return environment }
        var parts = executable.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if parts.count >= 3, parts[parts.count - 2] == "bin" {
            parts.removeLast(2)
        } else if parts.count >= 4, parts[parts.count - 3] == "libexec" {
            parts.removeLast(3)
        } else if let build = parts.dropLast().lastIndex(of: ".build"), build > 0 {
            return parts[...build].joined(separator: "/") + "/locale"
        } else {
            return "/usr/share/locale"
        }
        let prefix = parts.joined(separator: "/")
        return (prefix.isEmpty ? "" : prefix) + "/share/locale"
    }

    /// The catalogs beside this program (`installedDirectory` of /proc/self/exe), or
    /// `FINGERSEAL_LOCALEDIR`.
    public static func bindInstalled() {
        bind(directory: installedDirectory(executable: symbolicLinkTarget("/proc/self/exe") ?? "",
                                           environment: getenv("FINGERSEAL_LOCALEDIR").map { String(cString: $0) }))
    }

    // MARK: Rendering

    /// The catalog's sentence for `message` in this thread's language, placeholders filled.
    public static func text(_ message: String, _ arguments: [String] = []) -> String {
        let translated = message.withCString { id in dgettext(domain, id).map { String(cString: $0) } } ?? message
        return fill(translated, arguments)
    }

    /// The plural form for `count` (ngettext): `singular` and `plural` are the English forms;
    /// the count is usually one of `arguments` too.
    public static func plural(_ singular: String, _ plural: String, _ count: Int, _ arguments: [String] = []) -> String {
        let n = UInt(clamping: count)
        let translated = singular.withCString { one in
            plural.withCString { many in dngettext(domain, one, many, n).map { String(cString: $0) } }
        } ?? (count == 1 ? singular : plural)
        return fill(translated, arguments)
    }

    /// `%N$s` → arguments[N-1], `%%` → `%`; anything else stays as written.
    public static func fill(_ template: String, _ arguments: [String]) -> String {
        guard template.utf8.contains(UInt8(ascii: "%")) else { return template }
        var result = ""
        var characters = Array(template)
        var index = 0
        while index < characters.count {
            let character = characters[index]
            guard character == "%", index + 1 < characters.count else {
                result.append(character)
                index += 1
                continue
            }
            if characters[index + 1] == "%" {
                result.append("%")
                index += 2
                continue
            }
            var end = index + 1
            var number = 0
            while end < characters.count, let digit = characters[end].wholeNumberValue, characters[end].isASCII {
                number = number * 10 + digit
                end += 1
            }
            if end > index + 1, end + 1 < characters.count, characters[end] == "$", characters[end + 1] == "s",
               number >= 1, number <= arguments.count {
                result += arguments[number - 1]
                index = end + 2
            } else {
                result.append(character)
                index += 1
            }
        }
        characters.removeAll()
        return result
    }

    // MARK: Choosing the language

    /// The language a command-line program's environment asks for, as gettext reads it:
    /// `LANGUAGE` (a colon list, honoured unless the locale is C), else the first set of
    /// `LC_ALL`, `LC_MESSAGES`, `LANG`. Nil: none (English).
    public static func preference(_ environment: (String) -> String?) -> String? {
        var locale: String? = nil
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            if let value = environment(name), !value.isEmpty { locale = value; break }
        }
        if let language = environment("LANGUAGE"), !language.isEmpty {
            // gettext ignores LANGUAGE under the C locale; people set LANGUAGE=nb alone and
            // expect Norwegian, so here it counts unless the locale is set to C or POSIX.
            if locale != "C" && locale != "POSIX" { return language }
        }
        return locale
    }

    /// A chosen language: a locale that exists on this machine and a catalog for it.
    public struct Language: Sendable, Equatable {
        /// The locale's name (`nb_NO.UTF-8`).
        public let locale: String
        fileprivate let handle: Handle
        public static func == (a: Language, b: Language) -> Bool { a.locale == b.locale }
    }

    /// The first entry of `preference` (a `LANGUAGE` list or a locale name such as
    /// `nb_NO.UTF-8`) that fingerseal can speak; nil means English (C, POSIX, en, or nothing
    /// we have a catalog for). Hostile input is harmless: names are checked before glibc sees them.
    public static func language(_ preference: String?) -> Language? {
        guard let preference, preference.utf8.count <= 256 else { return nil }
        for entry in preference.split(separator: ":").map(String.init) where isSafeName(entry) {
            if isEnglish(entry) { return nil }
            let (language, territory) = parts(entry)
            guard hasCatalog(language) || (territory.map { hasCatalog(language + "_" + $0) } ?? false) else { continue }
            let territoryGuess = defaultTerritory[language] ?? language.uppercased()
            var candidates: [String] = []
            if let territory { candidates += [language + "_" + territory + ".UTF-8", entry] }
            candidates.append(language + "_" + territoryGuess + ".UTF-8")
            for name in candidates {
                if let handle = LocaleCache.shared.locale(name) { return Language(locale: name, handle: handle) }
            }
        }
        return nil
    }

    /// Whether the locale `name` exists on this machine (newlocale accepts it).
    public static func languageAvailable(_ name: String) -> Bool {
        isSafeName(name) && LocaleCache.shared.locale(name) != nil
    }

    private static func use(_ language: Language?) {
        _ = uselocale(language?.handle.raw ?? fs_global_locale())
    }

    /// This thread's language, to hand on to a thread it starts.
    public static var current: Language? { Current.language }

    /// Runs `body` in `language` on this thread, then restores the language before.
    public static func with<T>(_ language: Language?, _ body: () throws -> T) rethrows -> T {
        let before = Current.language
        Current.language = language
        use(language)
        defer {
            Current.language = before
            use(before)
        }
        return try body()
    }

    /// Makes `language` this thread's language for the rest of the thread (a request's thread).
    public static func adopt(_ language: Language?) {
        Current.language = language
        use(language)
    }

    // MARK: Times

    /// This thread's time zone for the times it shows: the person's (the request's), or nil
    /// when the request named none that could be used, and then UTC, said as such.
    public static var zone: Zone? { Current.zone }

    /// Runs `body` with `zone` as this thread's zone, then restores the zone before.
    public static func with<T>(zone: Zone?, _ body: () throws -> T) rethrows -> T {
        let before = Current.zone
        Current.zone = zone
        defer { Current.zone = before }
        return try body()
    }

    /// Makes `zone` this thread's zone for the rest of the thread (a request's thread).
    public static func adopt(zone: Zone?) { Current.zone = zone }

    /// Makes the zone `name` this thread's zone for the rest of the thread, `resolve`d only
    /// when a time is first shown: most answers show none, and reading the zone's file cost a
    /// PAM request for a user without a vault a twentieth of its time.
    public static func adopt(zoneNamed name: String?, resolve: @escaping (String) -> Zone?) {
        Current.zones.value = name.map { .named($0, resolve) } ?? .resolved(nil)
    }

    /// `seconds` since the epoch as a date and a time to the minute in this thread's zone and
    /// language ("2026-12-01 at 20:09", "02. des. 2026 kl. 20:09"); with the zone's
    /// abbreviation only when it is not the person's own (UTC, when the request named none).
    public static func localTime(_ seconds: Int64) -> String {
        guard let (parts, type) = localParts(seconds) else { return String(seconds) }
        let date = format(Current.language == nil ? "%Y-%m-%d" : "%x", parts) ?? String(seconds)
        let clock = format2(parts.tm_hour) + ":" + format2(parts.tm_min)
        let shown = tr("%1$s at %2$s", date, clock)
        return Current.zone == nil ? shown + " " + type.abbreviation : shown
    }

    /// How `seconds` lies from `now` in local days, for "today at 20:09": the day (0 today,
    /// 1 yesterday, nil further or in the future) and the clock time to the minute.
    public static func localDay(_ seconds: Int64, now: Int64) -> (daysAgo: Int?, clock: String) {
        guard let (then, _) = localParts(seconds), let (today, _) = localParts(now) else { return (nil, String(seconds)) }
        let clock = format2(then.tm_hour) + ":" + format2(then.tm_min)
        if then.tm_year == today.tm_year && then.tm_yday == today.tm_yday { return (0, clock) }
        // Yesterday: the local day before today's (across a year's end too).
        if let (yesterday, _) = localParts(now - 86_400), then.tm_year == yesterday.tm_year, then.tm_yday == yesterday.tm_yday {
            return (1, clock)
        }
        return (nil, clock)
    }

    /// The calendar fields of `seconds` in this thread's zone: its offset added, then read
    /// as UTC (gmtime_r), since localtime_r knows only the process's one zone.
    private static func localParts(_ seconds: Int64) -> (tm, LocalTimeType)? {
        let type = (Current.zone ?? .utc).type(at: seconds)
        let (shifted, overflow) = seconds.addingReportingOverflow(Int64(type.utcOffset))
        guard !overflow else { return nil }
        var time = time_t(shifted)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return nil }
        return (parts, type)
    }

    /// strftime in this thread's language (strftime_l takes a real locale, never
    /// LC_GLOBAL_LOCALE; English is the C locale's format).
    private static func format(_ pattern: String, _ fields: tm) -> String? {
        var parts = fields
        var buffer = [CChar](repeating: 0, count: 128)
        let language = Current.language
        let count = buffer.withUnsafeMutableBufferPointer { out in
            language.map { strftime_l(out.baseAddress, out.count, pattern, &parts, $0.handle.raw) }
                ?? strftime(out.baseAddress, out.count, pattern, &parts)
        }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func format2(_ value: Int32) -> String {
        value < 10 ? "0" + String(value) : String(value)
    }

    // MARK: Internals

    /// Languages whose locale is not `xx_XX` (nb → nb_NO). "no" is Norwegian's old code.
    private static let defaultTerritory = ["nb": "NO", "nn": "NO", "no": "NO", "en": "US", "da": "DK", "sv": "SE"]

    private static func isEnglish(_ name: String) -> Bool {
        let (language, _) = parts(name)
        return language == "C" || language == "POSIX" || language == "en"
    }

    /// `nb_NO.UTF-8@euro` → ("nb", "NO"); "no" reads as "nb".
    private static func parts(_ name: String) -> (String, String?) {
        var base = Substring(name)
        if let at = base.firstIndex(of: "@") { base = base[..<at] }
        if let dot = base.firstIndex(of: ".") { base = base[..<dot] }
        let pieces = base.split(separator: "_", maxSplits: 1).map(String.init)
        let language = pieces.first.map { $0 == "no" ? "nb" : $0 } ?? ""
        return (language, pieces.count > 1 ? pieces[1] : nil)
    }

    private static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 64 && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
                || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "@")
        }
    }

    private static func hasCatalog(_ language: String) -> Bool {
        access(directory + "/" + language + "/LC_MESSAGES/" + domain + ".mo", R_OK) == 0
    }
}

/// A glibc locale, kept for the process's life (a handful at most: only locales installed on
/// this machine that we have a catalog for are ever opened).
final class Handle: @unchecked Sendable {
    let raw: locale_t
    init(_ raw: locale_t) { self.raw = raw }
}

private final class LocaleCache: @unchecked Sendable {
    static let shared = LocaleCache()
    private var mutex = pthread_mutex_t()
    private var opened: [String: Handle] = [:]
    init() { pthread_mutex_init(&mutex, nil) }

    func locale(_ name: String) -> Handle? {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        if let handle = opened[name] { return handle }
        guard let raw = fs_newlocale(name) else { return nil }
        let handle = Handle(raw)
        opened[name] = handle
        return handle
    }
}

/// The thread's chosen language (the glibc side is `uselocale`; this keeps the Swift value)
/// and time zone.
private enum Current {
    static let languages = PerThread<Localization.Language>()
    static let zones = PerThread<ZoneChoice>()

    /// A thread's zone, or the name of one not read yet.
    enum ZoneChoice {
        case resolved(Zone?)
        case named(String, (String) -> Zone?)
    }

    static var language: Localization.Language? {
        get { languages.value }
        set { languages.value = newValue }
    }

    /// Resolved, and kept so, when first read.
    static var zone: Zone? {
        get {
            switch zones.value {
            case nil: return nil
            case .resolved(let zone): return zone
            case .named(let name, let resolve):
                let zone = resolve(name)
                zones.value = .resolved(zone)
                return zone
            }
        }
        set { zones.value = .resolved(newValue) }
    }
}

/// One value per thread (pthread_setspecific), released when the thread ends.
private final class PerThread<Value>: @unchecked Sendable {
    private final class Box {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        pthread_key_create(&key) { raw in if let raw { Unmanaged<AnyObject>.fromOpaque(raw).release() } }
        self.key = key
    }

    var value: Value? {
        get {
            guard let raw = pthread_getspecific(key) else { return nil }
            return Unmanaged<Box>.fromOpaque(raw).takeUnretainedValue().value
        }
        set {
            if let old = pthread_getspecific(key) { Unmanaged<Box>.fromOpaque(old).release() }
            pthread_setspecific(key, newValue.map { UnsafeRawPointer(Unmanaged.passRetained(Box($0)).toOpaque()) })
        }
    }
}

/// A sentence from the catalog (gettext domain `fingerseal`) in this thread's language. The
/// literal is the msgid: scripts/update-po extracts every `tr("…")` and `trn("…", "…", …)`
/// into po/fingerseal.pot, so it must be one plain string literal, never interpolated;
/// placeholders are `%1$s`, `%2$s`, … filled from `arguments` in order (po/README).
public func tr(_ message: String, _ arguments: any CustomStringConvertible...) -> String {
    Localization.text(message, arguments.map(\.description))
}

/// A sentence with a number in it (ngettext): the form for `count` in this thread's language.
public func trn(_ singular: String, _ plural: String, _ count: Int, _ arguments: any CustomStringConvertible...) -> String {
    Localization.plural(singular, plural, count, arguments.map(\.description))
}
