// swift-tools-version:6.1
import PackageDescription

// The floor under mirror serve: Hummingbird 2 alone, as mirror serve builds on it, with no
// code of mirror's (see main.swift).
let package = Package(
    name: "serve-floor",
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
    ],
    targets: [
        .executableTarget(
            name: "serve-floor",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
    ]
)
