// What a test that runs scenarios reads and writes: the run's result, its checks and report
// (NetsimRunner), the scenario model (NetsimScenario), routes and faults for hand-written
// networks. `import NetsimTesting` is all a test needs.
@_exported import NetsimRunner
@_exported import NetsimScenario
@_exported import NetsimHTTP
@_exported import NetsimRelay
@_exported import NetsimLink
@_exported import NetsimCore
