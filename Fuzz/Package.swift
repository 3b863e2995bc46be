// swift-tools-version:6.0
// libFuzzer harnesses, separate from the main package so the normal build never links
// libFuzzer. `make fuzz` (scripts/fuzz) runs each target briefly, `make fuzz-long` for a
// million executions each, growing the corpus kept in Fuzz/corpus/<target>/.
import PackageDescription

let package = Package(
    name: "fingerseal-fuzz",
    dependencies: [.package(name: "fingerseal", path: "..")],
    targets: [
        .systemLibrary(name: "CLibFuzzer"),
        // The fuzzer's bytes read as structured choices, for the targets that build messages.
        .target(name: "FuzzInput"),
        // Every parser of untrusted input, one selector byte each.
        .executableTarget(
            name: "fuzz-parsers",
            dependencies: ["CLibFuzzer", .product(name: "FingersealCore", package: "fingerseal"),
                           .product(name: "FingersealWire", package: "fingerseal"),
                           .product(name: "IdentityClient", package: "fingerseal"),
                           .product(name: "JOSEKit", package: "fingerseal"),
                           .product(name: "ZoneInfo", package: "fingerseal")]
        ),
        // The PAM module's entry points through libpam, against a broker that plays the input's
        // replies. The module is the Embedded build, instrumented (scripts/build-module
        // --coverage), loaded with dlopen: its coverage counters resolve against libFuzzer's in
        // this executable, hence --export-dynamic.
        .executableTarget(
            name: "fuzz-pam",
            dependencies: ["CLibFuzzer", "FuzzInput", .product(name: "FingersealWire", package: "fingerseal"),
                           .product(name: "PAMKit", package: "fingerseal"), .product(name: "SystemKit", package: "fingerseal")],
            linkerSettings: [.unsafeFlags(["-Xlinker", "--export-dynamic"])]
        ),
        // The broker's dispatcher in process, a real store in a temporary directory, request
        // sequences over socketpairs made as root or as another uid.
        .executableTarget(
            name: "fuzz-broker",
            dependencies: ["CLibFuzzer", "FuzzInput", .product(name: "Broker", package: "fingerseal"),
                           .product(name: "FingersealCore", package: "fingerseal"),
                           .product(name: "FingersealWire", package: "fingerseal"),
                           .product(name: "SystemKit", package: "fingerseal")]
        ),
    ]
)
