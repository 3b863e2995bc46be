import Glibc

/// Orca itself (Debian's orca and speech-dispatcher) on a `DesktopSession`: what a blind person
/// hears, read from Orca's own record of what it sends to speech (`orca_record.py`, which
/// prints each "SPEECH OUTPUT" line as Orca writes it). No audio device: speech-dispatcher runs
/// in the foreground with its dummy module on ALSA's null device, from a configuration of the
/// session's own. `stop()` (or dropping it) ends Orca and speech-dispatcher.
final class ScreenReader {
    static let orca = "/usr/bin/orca"
    static let speechDispatcher = "/usr/bin/speech-dispatcher"
    static let recorder = Paths.packageRoot + "/Tests/TestSupport/orca_record.py"

    /// Why Orca cannot run here, or nil (scripts/install-deps installs all of it).
    static let missing: String? = {
        for tool in [orca, speechDispatcher, "/usr/lib/speech-dispatcher-modules/sd_dummy",
                     "/usr/lib/x86_64-linux-gnu/speech-dispatcher/spd_alsa.so"] where access(tool, R_OK) != 0 {
            return "\(tool) is missing (scripts/install-deps installs orca and speech-dispatcher)"
        }
        return nil
    }()

    /// Orca's whole debug record, for a person to read when a test fails.
    let recordPath: String
    /// Everything heard so far, in order ("Screen reader on." first).
    private(set) var heard: [String] = []
    private var speech: Child?
    private var recorder: Child?

    init(_ desktop: DesktopSession) throws {
        if let missing = ScreenReader.missing { throw TestFailure(missing) }
        let configuration = desktop.temp.file("speech-dispatcher")
        recordPath = desktop.temp.file("orca-debug.log")
        guard let runtime = desktop.environment["XDG_RUNTIME_DIR"],
              Child.runQuietly("/bin/cp", ["-r", "/etc/speech-dispatcher", configuration]) == 0 else {
            throw TestFailure("cannot copy speech-dispatcher's configuration")
        }
        // No sound card here: the dummy module "speaks" into ALSA's null device.
        var conf = readFile(configuration + "/speechd.conf") ?? []
        conf += Array("\nAudioOutputMethod \"alsa\"\nAudioALSADevice \"null\"\n".utf8)
        writeFile(configuration + "/speechd.conf", conf)
        do {
            speech = try Child(ScreenReader.speechDispatcher, ["--run-single", "--timeout", "0", "--config-dir", configuration,
                                                               "--log-dir", desktop.temp.path],
                               environment: desktop.environment, errorLog: desktop.temp.file("speech-dispatcher.out"))
            // Orca finds it by this socket; it is made once speech-dispatcher listens.
            try DesktopSession.waitFor(path: runtime + "/speech-dispatcher/speechd.sock", what: "speech-dispatcher's socket")
            recorder = try Child(DesktopSession.python, [ScreenReader.recorder, recordPath], environment: desktop.environment)
            while let line = recorder?.readLine(timeout: 30), line != "ready" {
                if line.hasPrefix("speech ") { heard.append(String(line.dropFirst(7))) }
            }
            guard heard.contains("Screen reader on.") else {
                throw TestFailure("Orca did not start: \(heard) \(String(decoding: readFile(recordPath + ".stderr") ?? [], as: UTF8.self))")
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    /// Ends Orca and speech-dispatcher; with `keep`, Orca's whole record is copied to the
    /// test output (`DesktopSession.outputDirectory`) as `keep`.log, for a person to read.
    func stop(keep: String? = nil) {
        if let recorder {
            recorder.signal(SIGTERM)
            _ = recorder.finish(limit: 10)
        }
        recorder = nil
        if let keep, let directory = try? DesktopSession.outputDirectory(for: "ScreenReaderTests") {
            _ = Child.runQuietly("/bin/cp", [recordPath, directory + "/" + keep + ".log"])
        }
        if let speech {
            speech.signal(SIGTERM)
            _ = speech.finish(limit: 5)
        }
        speech = nil
    }

    /// Waits (bounded) until Orca says something that `matches` after the first `after`
    /// things it said, and returns it; throws with everything heard if it does not come.
    @discardableResult
    func waitToHear(_ what: String, after start: Int = 0, timeout: Double = 15, _ matches: (String) -> Bool) throws -> String {
        if let already = heard.dropFirst(start).first(where: matches) { return already }
        let deadline = VirtualSensor.now() + timeout
        while let recorder, VirtualSensor.now() < deadline,
              let line = recorder.readLine(timeout: max(0.1, deadline - VirtualSensor.now())) {
            guard line.hasPrefix("speech ") else { continue }
            let said = String(line.dropFirst(7))
            heard.append(said)
            if matches(said) { return said }
        }
        throw TestFailure("Orca never said \(what); it said: \(heard.map { "«\($0)»" }.joined(separator: " "))\nrecord: \(recordPath)")
    }

    /// What Orca said after the `count` first things.
    func heard(after count: Int) -> [String] { Array(heard.dropFirst(count)) }

    /// Orca's debug record so far.
    var record: String { String(decoding: readFile(recordPath) ?? [], as: UTF8.self) }
}
