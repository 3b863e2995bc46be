import Glibc
import Testing
@testable import TestSupport

/// The completion scripts: generated from the command tree, checked in as generated, loaded
/// by bash and zsh, and offering the commands and options.
@Suite struct CompletionTests {
    static let bashScript = Paths.packageRoot + "/completions/bash/fingerseal"
    static let zshScript = Paths.packageRoot + "/completions/zsh/_fingerseal"

    static func generated(_ shell: String) throws -> String {
        let result = try Child.run(Paths.cli, ["completion", shell])
        #expect(result.status == 0, "\(result.all)")
        return result.stdout
    }

    /// The checked-in files are what the generator prints (run `make completions` after
    /// changing a command or option).
    @Test(arguments: [("bash", bashScript), ("zsh", zshScript)])
    func checkedInMatchesTheGenerator(shell: String, file: String) throws {
        let text = String(decoding: readFile(file) ?? [], as: UTF8.self)
        #expect(text == (try CompletionTests.generated(shell)), "\(file) is stale: run make completions")
    }

    @Test func usage() throws {
        let none = try Child.run(Paths.cli, ["completion"])
        #expect(none.status == 2)
        #expect(none.stderr.contains("fingerseal completion bash"))
        #expect(try Child.run(Paths.cli, ["completion", "fish"]).status == 2)
    }

    /// bash: COMPREPLY for the words typed so far, one per line.
    static func bash(_ words: [String]) throws -> [String] {
        let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
        let script = """
            source \(bashScript) || exit 3
            complete -p fingerseal || exit 4
            COMP_WORDS=(\(quoted)); COMP_CWORD=\(words.count - 1)
            _fingerseal
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try Child.run("/bin/bash", ["--norc", "-c", script], environment: ["PATH": "/usr/bin:/bin"])
        #expect(result.status == 0, "\(result.all)")
        #expect(result.stdout.contains("complete -o bashdefault -o default -F _fingerseal fingerseal"))
        return result.stdout.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("complete ") }
    }

    @Test func bashOffersCommandsAndOptions() throws {
        let top = try CompletionTests.bash(["fingerseal", ""])
        for command in ["unlock", "enroll", "doctor", "completion", "pin", "step-up"] { #expect(top.contains(command), "\(top)") }
        #expect(try CompletionTests.bash(["fingerseal", "en"]) == ["enroll"])
        #expect(Set(try CompletionTests.bash(["fingerseal", "pin", ""])) == ["set", "change", "reset"])
        let enroll = try CompletionTests.bash(["fingerseal", "enroll", "--"])
        for option in ["--finger", "--pin-fd", "--timeout", "--help"] { #expect(enroll.contains(option), "\(enroll)") }
        #expect(try CompletionTests.bash(["fingerseal", "doctor", "--j"]) == ["--json"])
        // A choice's words, after an option that took a value.
        #expect(Set(try CompletionTests.bash(["fingerseal", "login", "--flow", ""])) == ["device", "password", "browser"])
        #expect(try CompletionTests.bash(["fingerseal", "login", "--issuer", "https://x", "--no-"]).contains("--no-qr"))
        // With bash-completion's loader, the system copy loads on first use.
        if access("/usr/share/bash-completion/bash_completion", R_OK) == 0 {
            let loaded = try Child.run("/bin/bash", ["--norc", "-c", "source /usr/share/bash-completion/bash_completion; source \(CompletionTests.bashScript); complete -p fingerseal"])
            #expect(loaded.status == 0, "\(loaded.all)")
        }
    }

    static var zsh: String? { access("/usr/bin/zsh", X_OK) == 0 ? "/usr/bin/zsh" : nil }

    /// zsh: the script registers itself with compinit, and its function offers the commands
    /// and options (`_describe` and `compadd` stand in for the completion system's).
    @Test(.enabled(if: CompletionTests.zsh != nil)) func zshLoadsAndOffersCommandsAndOptions() throws {
        // compinit's dump goes to a file of the test's own: pointed at /dev/null, zsh running
        // as root replaced the machine's /dev/null with a regular file.
        let home = try TempDirectory()
        let registered = try Child.run("/usr/bin/zsh", ["-fc", """
            autoload -Uz compinit && compinit -u -d \(home.file("zcompdump"))
            fpath=(\(Paths.packageRoot)/completions/zsh $fpath)
            autoload -Uz _fingerseal
            source \(CompletionTests.zshScript)
            print -r -- $_comps[fingerseal]
            """])
        #expect(registered.stdout.contains("_fingerseal"), "\(registered.all)")

        func offered(_ words: [String], prefix: String = "") throws -> [String] {
            let quoted = words.map { "'" + $0 + "'" }.joined(separator: " ")
            let result = try Child.run("/usr/bin/zsh", ["-fc", """
                compdef() { : }
                _describe() { print -rl -- "${(@P)${@[-1]}}" }
                compadd() { shift; print -rl -- "${(@P)1}" }
                _files() { print FILES }
                source \(CompletionTests.zshScript)
                words=(\(quoted)); CURRENT=\(words.count); PREFIX='\(prefix)'
                _fingerseal
                """])
            #expect(result.status == 0, "\(result.all)")
            return result.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) }
        }
        let top = try offered(["fingerseal", ""])
        for command in ["unlock", "enroll", "doctor", "completion"] { #expect(top.contains(command), "\(top)") }
        #expect(Set(try offered(["fingerseal", "pin", ""])) == ["set", "change", "reset"])
        let enroll = try offered(["fingerseal", "enroll", "-"], prefix: "-")
        for option in ["--finger", "--pin-fd", "--help"] { #expect(enroll.contains(option), "\(enroll)") }
        #expect(Set(try offered(["fingerseal", "login", "--flow", ""])) == ["device", "password", "browser"])
    }
}
