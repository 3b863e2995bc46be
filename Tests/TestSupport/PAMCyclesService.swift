import FingersealWire

/// What pam-cycles (Tests/Helpers/pam-cycles: many transactions in one process) runs the
/// module against: a service of the module alone, in a directory of its own, with a scripted
/// broker that answers each transaction with a prompt and then no match, or with no broker.
struct PAMCyclesService {
    let name: String
    let cycles: Int
    let directory: TempDirectory
    let broker: ScriptedBroker?

    init(name: String, cycles: Int, withBroker: Bool, patience: Double = 15) throws {
        self.name = name
        self.cycles = cycles
        directory = try TempDirectory()
        broker = withBroker
            ? try ScriptedBroker(Array(repeating: [.send(.info("Place your finger on the reader.")), .send(.result(Reply(.noMatch)))],
                                       count: cycles), patience: patience)
            : nil
        writeFile(directory.file(name),
                  Array("auth required \(Paths.module) socket=\(broker?.path ?? directory.file("missing"))\n".utf8), mode: 0o644)
    }

    static var helper: String { Paths.buildDirectory + "/pam-cycles" }

    /// The helper's arguments: this service, for alice, `cycles` times.
    var arguments: [String] { [directory.path, name, "alice", "\(cycles)"] }
}
