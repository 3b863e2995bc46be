import CQRencode
import Glibc

public enum QRError: Error, Equatable, Sendable {
    case emptyInput
    /// libqrencode reads a C string, so an embedded NUL would silently truncate the payload.
    case embeddedNUL
    /// More bytes than a version-40 symbol holds at level M.
    case inputTooLarge(bytes: Int)
    /// libqrencode failed for another reason; carries its errno.
    case encodingFailed(errno: Int32)
}

/// A QR code symbol (level M, 8-bit mode), copied out of libqrencode so no C memory is kept.
public struct QRCode: Sendable, Equatable {
    /// QR version 1...40; `size == 17 + 4 * version`.
    public let version: Int
    /// Modules per side.
    public let size: Int
    private let dark: [Bool]

    public init(text: String) throws(QRError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw QRError.emptyInput }
        guard !bytes.contains(0) else { throw QRError.embeddedNUL }
        // errno is only meaningful on failure; clear it so a stale value is never reported.
        errno = 0
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else {
            let code = errno
            // libqrencode reports "does not fit in version 40" as ERANGE.
            if code == ERANGE { throw QRError.inputTooLarge(bytes: bytes.count) }
            throw QRError.encodingFailed(errno: code)
        }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        guard width > 0, let data = code.pointee.data else { throw QRError.encodingFailed(errno: 0) }
        // Bit 0 of each module byte is dark/light; the other bits describe the module's role.
        let modules = UnsafeBufferPointer(start: data, count: width * width)
        version = Int(code.pointee.version)
        size = width
        dark = modules.map { $0 & 1 == 1 }
    }

    /// Whether the module is dark. Outside the symbol is the (light) quiet zone.
    public func isDark(row: Int, column: Int) -> Bool {
        guard row >= 0, row < size, column >= 0, column < size else { return false }
        return dark[row * size + column]
    }

    /// Text rendering with two module rows per line, dark modules drawn as block glyphs,
    /// surrounded by `quietZone` light modules. Lines are joined by "\n", no trailing newline.
    public func renderHalfBlocks(quietZone: Int = 2) -> String {
        let quiet = max(0, quietZone)
        let span = size + 2 * quiet
        var lines: [String] = []
        lines.reserveCapacity((span + 1) / 2)
        for top in stride(from: -quiet, to: size + quiet, by: 2) {
            var line = ""
            line.reserveCapacity(span * 3)
            for column in -quiet..<(size + quiet) {
                switch (isDark(row: top, column: column), isDark(row: top + 1, column: column)) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
