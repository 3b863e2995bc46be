// swift-tools-version:6.0
// libFuzzer harness for every parser of untrusted input. Separate from the main package so
// the normal build never links libFuzzer. Run with `make fuzz` (scripts/fuzz).
import PackageDescription

let package = Package(
    name: "fingerseal-fuzz",
    dependencies: [.package(name: "fingerseal", path: "..")],
    targets: [
        .systemLibrary(name: "CLibFuzzer"),
        .executableTarget(
            name: "fuzz-parsers",
            dependencies: ["CLibFuzzer", .product(name: "FingersealCore", package: "fingerseal"),
                           .product(name: "IdentityClient", package: "fingerseal"),
                           .product(name: "JOSEKit", package: "fingerseal"),
                           .product(name: "ZoneInfo", package: "fingerseal")]
        ),
    ]
)
