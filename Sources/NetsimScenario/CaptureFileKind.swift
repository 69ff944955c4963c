import Foundation

/// Tells a capture file from what is not one by its first four bytes, without reading it:
/// the scenario check refuses a folder, an empty file or a text file as `replay:` with its
/// place, and the replay reads the capture itself when the run starts.
enum CaptureFileKind {
    /// pcap in either byte order and time precision, and pcapng's section header block.
    static let magics: Set<[UInt8]> = [
        [0xD4, 0xC3, 0xB2, 0xA1], [0xA1, 0xB2, 0xC3, 0xD4], [0x4D, 0x3C, 0xB2, 0xA1], [0xA1, 0xB2, 0x3C, 0x4D],
        [0x0A, 0x0D, 0x0D, 0x0A],
    ]

    /// Why the file at `path` is not a capture; nil when it starts like one.
    static func problem(at path: String) -> String? {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return "there is no such file" }
        if isFolder.boolValue { return "it is a folder, not a capture file" }
        guard let handle = FileHandle(forReadingAtPath: path) else { return "cannot open it" }
        defer { try? handle.close() }
        let head = [UInt8]((try? handle.read(upToCount: 4)) ?? Data())
        if head.isEmpty { return "the file is empty" }
        if head.count < 4 || !magics.contains(head) { return "it is not a pcap or pcapng file (it does not start like one)" }
        return nil
    }
}
