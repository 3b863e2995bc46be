import FingersealWire
import Localization

/// `fingerseal completion bash|zsh`: the completion scripts, generated from the command tree
/// that `--help` is generated from, so a new command or option completes the day it exists.
/// The scripts are also checked in (completions/), for packages to install without running
/// the binary; a test fails when they differ from what this prints (regenerate with
/// `make completions`).
enum Completion {
    static func run(_ parsed: ParsedArguments, _ output: Output) throws(CLIError) -> Int32 {
        guard parsed.positionals.count == 1, let shell = parsed.positionals.first else {
            throw CLIError(.usage, Strings.completionNeedsShell)
        }
        // The scripts are the same whatever the language of the run (the checked-in ones are
        // compared with this): summaries and option help as their English msgids, never
        // looked up, and the rest generated in the C locale.
        switch shell {
        case "bash": output.out(Localization.with(nil) { bash(Commands.root) })
        case "zsh": output.out(Localization.with(nil) { zsh(Commands.root) })
        default: throw CLIError(.usage, Strings.completionNeedsShell)
        }
        return Outcome.success.exitCode
    }

    /// Every node of the tree with its path below the root ("" for the root, "pin set").
    static func nodes(_ spec: CommandSpec, _ path: [String] = []) -> [(path: String, spec: CommandSpec)] {
        [(path.joined(separator: " "), spec)] + spec.subcommands.flatMap { nodes($0, path + [$0.name]) }
    }

    static func options(_ spec: CommandSpec) -> [OptionSpec] { spec.options + [CommandSpec.help] }

    /// Options that take the next word as their value, and the words a choice allows.
    static func valueCases(_ root: CommandSpec) -> (takesValue: [String], choices: [(String, [String])], rest: [String]) {
        var takesValue: [String] = []
        var choices: [(String, [String])] = []
        var rest: [String] = []
        for (path, spec) in nodes(root) {
            for option in options(spec) {
                let key = path.isEmpty ? option.name : path + " " + option.name
                switch option.kind {
                case .flag: break
                case .rest: rest.append(key)
                case let .choice(words):
                    takesValue.append(key)
                    choices.append((key, words))
                case .value, .number, .descriptor: takesValue.append(key)
                }
            }
        }
        return (takesValue, choices, rest)
    }

    // MARK: bash

    static func bash(_ root: CommandSpec) -> String {
        let all = nodes(root)
        let (takesValue, choices, rest) = valueCases(root)
        func pattern(_ keys: [String]) -> String { keys.map { "\"\($0)\"" }.joined(separator: "|") }
        var lines = [
            "# bash completion for fingerseal. Generated from its command tree by: fingerseal completion bash",
            "",
            "_fingerseal_commands() {",
            "    case \"$1\" in",
        ]
        for (path, spec) in all where !spec.subcommands.isEmpty {
            lines.append("        \"\(path)\") echo \"\(spec.subcommands.map(\.name).joined(separator: " "))\" ;;")
        }
        lines += ["    esac", "}", "", "_fingerseal_options() {", "    case \"$1\" in"]
        for (path, spec) in all {
            lines.append("        \"\(path)\") echo \"\(options(spec).map(\.name).joined(separator: " "))\" ;;")
        }
        lines += ["    esac", "}", "", "_fingerseal_choices() {", "    case \"$1\" in"]
        for (key, words) in choices { lines.append("        \"\(key)\") echo \"\(words.joined(separator: " "))\" ;;") }
        lines += [
            "    esac",
            "}",
            "",
            "_fingerseal() {",
            "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" path=\"\" word key i value=\"\" subs",
            "    COMPREPLY=()",
            "    for ((i = 1; i < COMP_CWORD; i++)); do",
            "        word=\"${COMP_WORDS[i]}\"",
            "        if [[ -n \"$value\" ]]; then value=\"\"; continue; fi",
            "        key=\"${path:+$path }$word\"",
            "        case \"$key\" in",
            "            \(pattern(rest))) COMPREPLY=($(compgen -c -- \"$cur\")); return 0 ;;",
            "            \(pattern(takesValue))) value=\"$key\"; continue ;;",
            "        esac",
            "        [[ \"$word\" == -* ]] && continue",
            "        subs=\" $(_fingerseal_commands \"$path\") \"",
            "        [[ \"$subs\" == *\" $word \"* ]] && path=\"${path:+$path }$word\"",
            "    done",
            "    if [[ -n \"$value\" ]]; then",
            "        local words",
            "        words=\"$(_fingerseal_choices \"$value\")\"",
            "        [[ -n \"$words\" ]] && COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))",
            "        return 0",
            "    fi",
            "    if [[ \"$cur\" == -* ]]; then",
            "        COMPREPLY=($(compgen -W \"$(_fingerseal_options \"$path\")\" -- \"$cur\"))",
            "    else",
            "        COMPREPLY=($(compgen -W \"$(_fingerseal_commands \"$path\")\" -- \"$cur\"))",
            "    fi",
            "    return 0",
            "}",
            "",
            "# Files when nothing else fits (seal FILE, reveal FILE, --out FILE).",
            "complete -o bashdefault -o default -F _fingerseal fingerseal",
        ]
        return lines.joined(separator: "\n")
    }

    // MARK: zsh

    /// Single-quoted for zsh ("it's" → 'it'\''s').
    static func quoted(_ text: String) -> String { "'" + text.replacingQuotes() + "'" }

    static func zsh(_ root: CommandSpec) -> String {
        let all = nodes(root)
        let (takesValue, choices, rest) = valueCases(root)
        func pattern(_ keys: [String]) -> String { keys.map(quoted).joined(separator: "|") }
        var lines = [
            "#compdef fingerseal",
            "# zsh completion for fingerseal. Generated from its command tree by: fingerseal completion zsh",
            "",
            "# The commands below PATH, as name:summary.",
            "_fingerseal_commands() {",
            "    case $1 in",
        ]
        for (path, spec) in all where !spec.subcommands.isEmpty {
            let entries = spec.subcommands.map { quoted($0.name + ":" + $0.summary.msgid) }
            lines.append("        \(quoted(path))) reply=(\(entries.joined(separator: " "))) ;;")
        }
        lines += ["        *) reply=() ;;", "    esac", "}", "", "# The options of PATH, as name:help.", "_fingerseal_options() {",
                  "    case $1 in"]
        for (path, spec) in all {
            let entries = options(spec).map { quoted($0.name + ":" + $0.help.msgid) }
            lines.append("        \(quoted(path))) reply=(\(entries.joined(separator: " "))) ;;")
        }
        lines += ["        *) reply=() ;;", "    esac", "}", "", "_fingerseal_choices() {", "    case $1 in"]
        for (key, words) in choices { lines.append("        \(quoted(key))) reply=(\(words.map(quoted).joined(separator: " "))) ;;") }
        lines += [
            "        *) reply=() ;;",
            "    esac",
            "}",
            "",
            "_fingerseal() {",
            "    local cmdpath='' word key value='' i",
            "    local -a reply",
            "    for ((i = 2; i < CURRENT; i++)); do",
            "        word=${words[i]}",
            "        if [[ -n $value ]]; then value=''; continue; fi",
            "        key=${cmdpath:+$cmdpath }$word",
            "        case $key in",
            "            \(pattern(rest))) _command_names -e; return ;;",
            "            \(pattern(takesValue))) value=$key; continue ;;",
            "        esac",
            "        [[ $word == -* ]] && continue",
            "        _fingerseal_commands \"$cmdpath\"",
            "        (( ${reply[(I)$word:*]} )) && cmdpath=${cmdpath:+$cmdpath }$word",
            "    done",
            "    if [[ -n $value ]]; then",
            "        _fingerseal_choices \"$value\"",
            "        if (( $#reply )); then compadd -a reply; else _files; fi",
            "        return",
            "    fi",
            "    if [[ $PREFIX == -* ]]; then",
            "        _fingerseal_options \"$cmdpath\"",
            "        _describe -t options 'option' reply",
            "    else",
            "        _fingerseal_commands \"$cmdpath\"",
            "        if (( $#reply )); then _describe -t commands 'command' reply; else _files; fi",
            "    fi",
            "}",
            "",
            "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then",
            "    _fingerseal \"$@\"",
            "else",
            "    compdef _fingerseal fingerseal",
            "fi",
        ]
        return lines.joined(separator: "\n")
    }
}

extension String {
    func replacingQuotes() -> String { replacingOccurrences("'", "'\\''") }

    /// Every `target` replaced (the CLI links no Foundation).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
