// swift-tools-version:6.0
import PackageDescription

/// Release builds lay fetchd's code out in the order it runs: each function of fetchd's own modules
/// in a section of its own, and the linker puts together, in the order of `Sources/fetchd/fetchd.order`,
/// the functions the quick bench ran, the most called first (`make code-layout` writes it). The code
/// a running fetchd touches then sits in few pages, and fewer of the binary's pages are resident
/// (docs/benchmarks.md, "Throttled transfers"). A function the order does not name keeps its place.
let codeLayout: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-function-sections"], .when(configuration: .release))]
let packageRoot = String(#filePath.dropLast("/Package.swift".count))
let codeOrder: [LinkerSetting] = [
    .unsafeFlags(["-Xlinker", "--section-ordering-file=\(packageRoot)/Sources/fetchd/fetchd.order"], .when(configuration: .release)),
]

let package = Package(
    name: "fetchd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "fetchd", targets: ["fetchd"]),
        // Claim + settle at the queue level on PostgreSQL, for Benchmarks/cluster.py.
        .executable(name: "fetchd-store-bench", targets: ["StoreBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        // System libraries: non-variadic shims over libcurl, SQLite and libpq; zlib for gzip responses.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // OpenSSL's digest contexts, whose state an object upload saves with each part.
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // Layers, each knowing nothing of the ones above it.
        .target(name: "Epoll"),
        // The debug check that a class's state is used only on its serial queue, for every layer with such classes.
        .target(name: "Confinement"),
        .target(name: "HTTPServer", dependencies: ["CZlib", "Epoll", .product(name: "Logging", package: "swift-log")]),
        .target(name: "Transfer", dependencies: [
            "CCurl", "COpenSSL", "Confinement", "DownloadCore", "Epoll",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "DownloadCore"),
        // The store as the service sees it (a protocol and its values); one module per backend.
        .target(name: "Persistence", dependencies: ["DownloadCore"]),
        .target(name: "SQLiteStore", dependencies: ["CSQLite", "Confinement", "DownloadCore", "Persistence"]),
        .target(name: "PostgresStore", dependencies: ["CPostgres", "DownloadCore", "Persistence"]),
        .target(name: "DownloadService", dependencies: [
            "Confinement", "DownloadCore", "Persistence", "SQLiteStore", "PostgresStore", "Transfer", "HTTPServer",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "fetchd", dependencies: [
            "DownloadService", "DownloadCore", "HTTPServer",
            .product(name: "Logging", package: "swift-log"),
        ], exclude: ["fetchd.order"], linkerSettings: codeOrder),

        .executableTarget(name: "StoreBench", dependencies: ["PostgresStore", "Persistence", "DownloadCore"], path: "Benchmarks/StoreBench"),

        // `make fuzz`: libFuzzer over the request parser, the JSON parser and the XML reader; built
        // plainly, each replays a corpus. FuzzSupport holds what every fuzz target's harness shares.
        .target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"),
        .executableTarget(name: "RequestParserFuzz", dependencies: ["HTTPServer", "FuzzSupport"], path: "Fuzz/RequestParserFuzz"),
        .executableTarget(name: "JSONParserFuzz", dependencies: ["DownloadCore", "FuzzSupport"], path: "Fuzz/JSONParserFuzz"),
        .executableTarget(name: "XMLReaderFuzz", dependencies: ["DownloadCore", "FuzzSupport"], path: "Fuzz/XMLReaderFuzz"),

        .target(name: "TestSupport", dependencies: ["DownloadCore"], path: "Tests/TestSupport"),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport", "CZlib"]),
        .testTarget(name: "TransferTests", dependencies: [
            "Transfer", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "DownloadCoreTests", dependencies: ["DownloadCore", "TestSupport"]),
        .testTarget(name: "SQLiteStoreTests", dependencies: ["TestSupport", "SQLiteStore", "Persistence", "DownloadCore", "CSQLite"]),
        // What every JobStore backend must do; each backend is one entry of StoreBackend.all.
        .testTarget(name: "StoreConformanceTests", dependencies: ["TestSupport", "SQLiteStore", "PostgresStore", "Persistence", "DownloadCore"]),
        .testTarget(name: "PostgresStoreTests", dependencies: ["PostgresStore", "Persistence", "DownloadCore"]),
        .testTarget(name: "DownloadServiceTests", dependencies: [
            "DownloadService", "DownloadCore", "Persistence", "SQLiteStore", "Transfer", "HTTPServer", "TestSupport",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)

// fetchd's own modules, those under Sources/ (not the system libraries' maps, the tests, the fuzz
// targets or the store bench), take `codeLayout`.
for target in package.targets where target.path == nil && target.type != .system && target.type != .test {
    target.swiftSettings = (target.swiftSettings ?? []) + codeLayout
}
