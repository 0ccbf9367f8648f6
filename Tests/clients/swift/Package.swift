// swift-tools-version:6.0
// A client generated from the repository's openapi.yaml by swift-openapi-generator with its default
// configuration, and a program that drives fetchd's main calls through it (Tests/e2e/test_generated_clients.py).
// Kept out of the main package so that building fetchd never builds the generator.
import PackageDescription

let package = Package(
    name: "fetchd-swift-client-check",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-openapi-generator", exact: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", exact: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", exact: "1.4.0"),
    ],
    targets: [
        .executableTarget(
            name: "FetchdClientCheck",
            dependencies: [
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        )
    ],
    swiftLanguageModes: [.v6]
)
