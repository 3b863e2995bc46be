/// A broker without a reader, root's vault in its store with the PIN `pin`, and the CLI's
/// environment for it (StepUpCLITests, TrustBoundaryTests).
struct StepUpHome {
    static let pin = "2580"

    let rig: ReaderBroker
    /// The test's files (inputs, sealed files).
    var temp: TempDirectory { rig.files }
    /// The CLI's environment.
    var environment: [String: String] { rig.environment() }

    init() throws {
        rig = try ReaderBroker(driver: "none", reader: false, pin: StepUpHome.pin)
    }

    /// In the test runner's session unless `ownSession`; `pin` (or nothing) on descriptor 3.
    func run(_ arguments: [String], pin: String? = nil, ownSession: Bool = false,
             environment extra: [String: String] = [:]) throws -> Child.Result {
        try rig.cli(arguments, fd3: pin.map { $0 + "\n" } ?? "", inTestSession: !ownSession, environment: extra)
    }
}
