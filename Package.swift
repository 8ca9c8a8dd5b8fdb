// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "mirror",
    // Built and tested on Linux only. On macOS, Synchronization's Mutex and Atomic need 15 at
    // least. The C library is imported in MirrorFiles alone, with a Darwin path beside Glibc's
    // (no inotify there: serve lists the folder each time), but it has not been built there.
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .visionOS(.v2)],
    products: [
        .executable(name: "mirror", targets: ["mirror"]),
        .library(name: "MirrorDevice", targets: ["MirrorDevice"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // The device library's DocC (MirrorDevice.docc says how: MirrorReplica and MirrorDevice in one archive).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Counted through swift-metrics' API in the library; the executable alone chooses the
        // Prometheus backend (`run --metrics-file`, `serve --metrics`).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Spans through swift-distributed-tracing's API in the library; the executable alone
        // exports them, and the metrics, over OTLP/HTTP (`run --otlp-endpoint`): no gRPC.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // The floors of the library, each importing only those below it (docs/development.md);
        // each declares exactly what it imports (scripts/check/check-package.py).
        .target(
            name: "MirrorFiles",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")]
        ),
        .target(name: "MirrorJSON"),
        .target(name: "MirrorModel", dependencies: ["MirrorJSON"]),
        .target(
            name: "MirrorStore",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .target(
            name: "MirrorJobFile",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .target(
            name: "MirrorHTTP",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        .target(
            name: "MirrorDownload",
            dependencies: [
                "MirrorFiles",
                "MirrorModel",
                "MirrorHTTP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "MirrorWalk",
            dependencies: [
                "MirrorJSON",
                "MirrorModel",
                "MirrorHTTP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .target(
            name: "MirrorExport",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorHTTP",
                "MirrorDownload",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "MirrorRemote",
            dependencies: [
                "MirrorFiles",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorHTTP",
                "MirrorExport",
                "MirrorReplica",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "MirrorReplay",
            dependencies: [
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A replica synced from a published prefix or a snapshot, answering the API's URLs
        // offline, with no HTTP client of its own: `mirror pull` gives it one over
        // AsyncHTTPClient, MirrorDevice one over URLSession (so the executable does not link
        // FoundationNetworking, nor libcurl under it).
        .target(
            name: "MirrorReplica",
            dependencies: [
                "MirrorFiles",
                "MirrorModel",
                "MirrorReplay",
                "MirrorStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        // The device's end, a library an app links: MirrorReplica with URLSession's
        // transfers. Only the lower floors: no NIO, no AsyncHTTPClient, no Hummingbird.
        .target(
            name: "MirrorDevice",
            dependencies: [
                "MirrorFiles",
                "MirrorModel",
                "MirrorReplay",
                "MirrorReplica",
                "MirrorStore",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "MirrorServe",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorDownload",
                "MirrorExport",
                "MirrorReplay",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "MirrorCore",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorHTTP",
                "MirrorDownload",
                "MirrorWalk",
                "MirrorExport",
                "MirrorRemote",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "mirror",
            dependencies: [
                "MirrorFiles",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorHTTP",
                "MirrorExport",
                "MirrorRemote",
                "MirrorServe",
                "MirrorCore",
                "MirrorReplica",
                "MirrorJSON",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The device library as an app links it, measured by scripts/bench/bench-device.sh.
        .executableTarget(
            name: "replica-bench",
            dependencies: ["MirrorDevice"],
            path: "Benchmarks/ReplicaBench"
        ),
        .target(
            name: "MirrorTestSupport",
            dependencies: [
                "MirrorModel",
                "MirrorStore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/Support"
        ),
        // The tests of each floor, beside its target; those of MirrorCore (with the Harness that
        // runs whole jobs) and of the executable stand on everything.
        .testTarget(
            name: "MirrorFilesTests",
            dependencies: [
                "MirrorFiles",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "MirrorModelTests",
            dependencies: [
                "MirrorModel",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "MirrorJobFileTests",
            dependencies: ["MirrorJSON", "MirrorModel", "MirrorJobFile"]
        ),
        .testTarget(
            name: "MirrorHTTPTests",
            dependencies: [
                "MirrorModel",
                "MirrorHTTP",
                "MirrorTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Fixtures are read from the source tree (see JWTSignerTests).
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "MirrorStoreTests",
            dependencies: [
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "MirrorWalkTests",
            dependencies: ["MirrorJSON", "MirrorModel", "MirrorJobFile", "MirrorHTTP", "MirrorWalk", "MirrorTestSupport"]
        ),
        .testTarget(
            name: "MirrorRemoteTests",
            dependencies: [
                "MirrorModel",
                "MirrorJobFile",
                "MirrorStore",
                "MirrorHTTP",
                "MirrorRemote",
                "MirrorReplica",
                "MirrorTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "MirrorExportTests",
            dependencies: [
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorFiles",
                "MirrorExport",
                "MirrorTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "MirrorReplayTests",
            dependencies: ["MirrorModel", "MirrorStore", "MirrorReplay", "MirrorTestSupport"]
        ),
        .testTarget(
            name: "MirrorDeviceTests",
            dependencies: ["MirrorFiles", "MirrorJSON", "MirrorModel", "MirrorReplay", "MirrorReplica", "MirrorDevice", "MirrorTestSupport",
                           .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "MirrorServeTests",
            dependencies: ["MirrorServe"]
        ),
        .testTarget(
            name: "MirrorCoreTests",
            dependencies: [
                "MirrorFiles",
                "MirrorJSON",
                "MirrorModel",
                "MirrorStore",
                "MirrorJobFile",
                "MirrorHTTP",
                "MirrorDownload",
                "MirrorWalk",
                "MirrorExport",
                "MirrorRemote",
                "MirrorReplay",
                "MirrorServe",
                "MirrorCore",
                "MirrorTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            // Fixtures are read from the source tree (see StoreUpgradeTests).
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "mirrorTests",
            dependencies: [
                "mirror",
                "MirrorModel",
                "MirrorJobFile",
                "MirrorDevice",
                "MirrorHTTP",
                "MirrorExport",
                "MirrorRemote",
                "MirrorCore",
                "MirrorTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Every target spells an existential `any` and imports each module whose members it uses,
// as Hummingbird does. Imports are internal unless written `package import`: such an import
// marks a module whose types appear in the target's own package-wide declarations.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
