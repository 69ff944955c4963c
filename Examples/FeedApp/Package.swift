// swift-tools-version:6.0
import PackageDescription

// An app's networking package that tests its client with netsim (docs/library.md). It depends
// on netsim by path, as a package beside a netsim checkout would; a package elsewhere writes
// `.package(url: "https://…/netsim.git", from: "…")` instead.
let package = Package(
    name: "FeedApp",
    platforms: [.macOS(.v13)],
    products: [.library(name: "FeedKit", targets: ["FeedKit"])],
    dependencies: [
        .package(name: "netsim", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
    ],
    targets: [
        // The app's feed client: AsyncHTTPClient with the app's recovery policy.
        .target(name: "FeedKit", dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")]),
        // Its tests: bundled scenarios and a hand-written fault, with the app's own client.
        .testTarget(name: "FeedKitTests", dependencies: ["FeedKit", .product(name: "NetsimTesting", package: "netsim")]),
    ]
)
