@testable import NetsimRunner
import Testing

/// An exec client that died for want of a library is told how to get it (QA 58: only Python's
/// traceback was shown).
@Suite struct MissingDependencyHintTests {
    @Test func pythonAndNodeMissingModulesAreNamedWithTheirInstallCommand() {
        let python = "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\nModuleNotFoundError: No module named 'h2.config'\n"
        #expect(MissingDependencyHint.hint(in: python) == "python3 cannot import h2: install it (pip install h2); ci/setup installs what the bundled clients need")
        let commonJS = "Error: Cannot find module 'undici'\nRequire stack:\n- /x/client.js\n"
        #expect(MissingDependencyHint.hint(in: commonJS)?.hasPrefix("node cannot find undici: install it (npm install undici)") == true)
        let module = "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'got' imported from /x/client.mjs\n"
        #expect(MissingDependencyHint.hint(in: module)?.hasPrefix("node cannot find got") == true)
        #expect(MissingDependencyHint.hint(in: "segmentation fault\n") == nil)
        #expect(MissingDependencyHint.hint(in: "No module named ''") == nil)
    }

    /// The hint is in the error of a client that exited before its hello.
    @Test func aClientThatCouldNotImportItsLibrarySaysWhatToInstall() async throws {
        let gone = try ExecDriver(command: ["sh", "-c", "read config; echo \"ModuleNotFoundError: No module named 'httpx'\" >&2; exit 1"],
                                  client: ExecProtocolTests.client())
        await #expect { try await gone.ready(timeout: .seconds(20)) } throws: { error in
            "\(error)".hasPrefix("the exec client exited (exit 1) before saying hello (python3 cannot import httpx: install it (pip install httpx);")
        }
        await gone.shutdown()
    }
}
