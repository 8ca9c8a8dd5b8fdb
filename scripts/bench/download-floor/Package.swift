// swift-tools-version:6.1
import PackageDescription

// The floor under mirror's downloads: SwiftNIO and swift-crypto alone, as mirror builds on
// them, with no HTTP client library and no code of mirror's (see main.swift).
let package = Package(
    name: "download-floor",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        .executableTarget(
            name: "download-floor",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ]
)
