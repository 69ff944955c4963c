// swift-tools-version:6.0
import PackageDescription

// Every dependency comes from the local package mirror (see docs/development.md).
let package = Package(
    name: "netsim",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "netsim", targets: ["netsim"]),
        .library(name: "NetsimCore", targets: ["NetsimCore"]),
        .library(name: "NetsimLink", targets: ["NetsimLink"]),
        .library(name: "NetsimFaults", targets: ["NetsimFaults"]),
        .library(name: "NetsimRelay", targets: ["NetsimRelay"]),
        .library(name: "NetsimRoutes", targets: ["NetsimRoutes"]),
        .library(name: "NetsimHTTP", targets: ["NetsimHTTP"]),
        .library(name: "NetsimTLS", targets: ["NetsimTLS"]),
        .library(name: "NetsimScenario", targets: ["NetsimScenario"]),
        .library(name: "NetsimRunner", targets: ["NetsimRunner"]),
        .library(name: "NetsimPcap", targets: ["NetsimPcap"]),
        .library(name: "NetsimService", targets: ["NetsimService"]),
        .library(name: "NetsimPacket", targets: ["NetsimPacket"]),
        // netsim inside your own tests (docs/library.md): scenarios with your client in-process.
        .library(name: "NetsimTesting", targets: ["NetsimTesting"]),
        .library(name: "NetsimDNS", targets: ["NetsimDNS"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.3.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        // Vocabulary shared by every module: units, endpoints, seeded randomness, clocks, events;
        // and the one way netsim starts a child process (SpawnedProcess, over posix_spawn).
        .target(name: "NetsimCore", dependencies: ["CNetsimSpawn"]),
        // The accept backoff every listener netsim makes puts in its pipeline.
        .target(name: "NetsimAccept", dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]),
        .target(name: "CNetsimSpawn"),
        // Pure impairment models: no I/O, clock and RNG injected.
        .target(name: "NetsimLink", dependencies: ["NetsimCore"]),
        // The fault catalog (one file per fault) and the connection state machine the faults act
        // on: no I/O, no NIO, so scenarios validate and faults test without an event loop.
        .target(
            name: "NetsimFaults",
            dependencies: ["NetsimCore", "NetsimLink", "NetsimRoutes", .product(name: "DequeModule", package: "swift-collections")]
        ),
        // The SwiftNIO relay: channel handlers that carry out what each connection's machine decides.
        .target(
            name: "NetsimRelay",
            dependencies: [
                "NetsimCore", "NetsimAccept", "NetsimLink", "NetsimFaults", "NetsimRoutes", "NetsimTLS", "CNetsimReceive", "CNetsimSplice",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // recvmsg(2) with the kernel's receive time and socket cookies: what the relay's timed reads
        // need and Swift's Glibc module cannot express.
        .target(name: "CNetsimReceive"),
        // mallopt(3) for the executable's allocator settings (MallocTuning).
        .target(name: "CNetsimAllocator"),
        // splice(2), sized pipes and a one-shot epoll for the relay's zero-copy path (Linux; ENOSYS elsewhere).
        .target(name: "CNetsimSplice"),
        // What the built-in upstream answers: routes, generated bodies, connectivity probes (no I/O).
        .target(name: "NetsimRoutes", dependencies: ["NetsimCore"]),
        // netsim's own certificate authority (kept in $NETSIM_HOME), leaves minted per name, and the
        // TLS configurations built from them: what interception and the TLS upstream present.
        .target(
            name: "NetsimTLS",
            dependencies: [
                "NetsimCore",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // The built-in upstream (routes from the scenario): HTTP/1.1, and over TLS HTTP/1.1 or h2 by
        // ALPN; records what it receives.
        .target(
            name: "NetsimHTTP",
            dependencies: [
                "NetsimCore", "NetsimAccept", "NetsimRoutes", "NetsimTLS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]
        ),
        // Scenario files: model, Yams parser keeping positions, validator, diagnostics.
        .target(
            name: "NetsimScenario",
            dependencies: ["NetsimCore", "NetsimLink", "NetsimFaults", "NetsimRoutes", .product(name: "Yams", package: "Yams")]
        ),
        // Runs scenarios: timeline, client drivers, expectations, reports.
        .target(
            name: "NetsimRunner",
            dependencies: [
                "NetsimCore", "NetsimLink", "NetsimRelay", "NetsimHTTP", "NetsimScenario", "NetsimPcap", "NetsimTLS",
                "NetsimPacket", "NetsimDNS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // netsim inside a package's own tests: scenario runs with an in-process client, and a
        // relay with faults for hand-written tests (docs/library.md).
        .target(
            name: "NetsimTesting",
            dependencies: ["NetsimCore", "NetsimLink", "NetsimRelay", "NetsimHTTP", "NetsimScenario", "NetsimRunner"]
        ),
        // libpcap, the system library (Debian: libpcap-dev).
        .systemLibrary(name: "CPcap", pkgConfig: "libpcap", providers: [.apt(["libpcap-dev"]), .brew(["libpcap"])]),
        // pcap: recording relay runs (a RelayTap), reading captures, TCP reassembly, replay, profile.
        .target(
            name: "NetsimPcap",
            dependencies: [
                "NetsimCore", "NetsimAccept", "NetsimRelay", "CPcap",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // Service mode: the Toxiproxy-compatible control API, the forward proxy, Prometheus metrics
        // (swift-metrics types on a per-server swift-prometheus registry: no global bootstrap).
        .target(
            name: "NetsimService",
            dependencies: [
                "NetsimCore", "NetsimAccept", "NetsimLink", "NetsimRelay", "NetsimTLS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Blocking loopback sockets and servers: what a plain client sees, for tests, bench and demo;
        // and for tests, waiting on events and child processes without sleeping or blocking a task.
        .target(name: "NetsimLoopback", dependencies: ["NetsimCore"]),
        // The packet path (Linux, root): a network namespace behind two TUN devices, the filter that
        // delivers only to the host side, and the per-packet link (pure models on injected time).
        .target(name: "CNetsimPacket"),
        .target(
            name: "NetsimPacket",
            dependencies: [
                "NetsimCore", "NetsimLink", "NetsimFaults", "NetsimPcap", "NetsimDNS", "CNetsimPacket",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        // netsim's DNS: the RFC 1035 message codec (pure), the zone and its faults (pure), and the
        // SwiftNIO server (UDP and TCP) that `netsim shell` puts at NETSIM_HOST:53.
        .target(
            name: "NetsimDNS",
            dependencies: [
                "NetsimCore", "NetsimAccept",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The command-line tool: flag parsing and printing only.
        .executableTarget(
            name: "netsim",
            dependencies: [
                "NetsimCore", "NetsimLink", "NetsimFaults", "NetsimRelay", "NetsimLoopback", "NetsimHTTP", "NetsimScenario", "NetsimRunner", "NetsimService", "NetsimPcap", "NetsimTLS", "NetsimPacket", "NetsimDNS", "CNetsimReceive", "CNetsimAllocator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "NetsimCoreTests", dependencies: ["NetsimCore", "NetsimLoopback"]),
        // The library as a package uses it: in-process clients through scenarios, TestNetwork.
        .testTarget(name: "NetsimTestingTests", dependencies: ["NetsimTesting", "NetsimLoopback"]),
        // The packet path's models without devices, and `netsim shell` as root with real namespaces.
        .testTarget(
            name: "NetsimPacketTests",
            dependencies: ["netsim", "NetsimCore", "NetsimLink", "NetsimPacket", "NetsimLoopback", "NetsimDNS"]
        ),
        .testTarget(name: "NetsimLinkTests", dependencies: ["NetsimCore", "NetsimLink", "NetsimLoopback"]),
        // The catalog and the connection machine, driven without sockets or event loops.
        .testTarget(name: "NetsimFaultsTests", dependencies: ["NetsimCore", "NetsimLink", "NetsimFaults"]),
        .testTarget(
            name: "NetsimHTTPTests",
            dependencies: [
                "NetsimCore", "NetsimHTTP", "NetsimLoopback", "NetsimTLS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(
            name: "NetsimTLSTests",
            dependencies: [
                "NetsimCore", "NetsimTLS", "NetsimLoopback",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .testTarget(name: "NetsimScenarioTests", dependencies: ["NetsimCore", "NetsimLink", "NetsimFaults", "NetsimRoutes", "NetsimScenario"]),
        .testTarget(
            name: "NetsimRunnerTests",
            dependencies: [
                "NetsimCore", "NetsimLink", "NetsimRelay", "NetsimHTTP", "NetsimScenario", "NetsimRunner", "NetsimLoopback", "NetsimTLS",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "NetsimServiceTests",
            dependencies: [
                "NetsimCore", "NetsimHTTP", "NetsimLink", "NetsimRelay", "NetsimService", "NetsimLoopback",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "NetsimPcapTests",
            dependencies: [
                "netsim", "NetsimCore", "NetsimLink", "NetsimRelay", "NetsimLoopback", "NetsimPcap",
                "NetsimScenario", "NetsimRunner", "CPcap",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The CLI as a process, and its --html pages in headless Chromium (NetsimRunner builds synthetic runs).
        .testTarget(
            name: "NetsimCLITests",
            dependencies: [
                "netsim", "NetsimCore", "NetsimLink", "NetsimFaults", "NetsimRelay", "NetsimLoopback", "NetsimRunner", "NetsimScenario", "NetsimTLS",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NetsimRelayTests",
            dependencies: [
                "NetsimCore", "NetsimAccept", "NetsimLink", "NetsimRelay", "NetsimLoopback", "NetsimHTTP", "NetsimTLS",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
    ]
)
