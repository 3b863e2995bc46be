import Testing
import QRKit
@testable import TestSupport

@Suite struct QRKitTests {
    let url = "https://idp.example.com/device?user_code=WDJB-MJHT"

    @Test func sizeMatchesVersion() throws {
        let code = try QRCode(text: url)
        #expect((1...40).contains(code.version))
        #expect(code.size == 17 + 4 * code.version)
        // 50 bytes in 8-bit mode at level M needs version 3 or 4 (62 / 84 byte capacity).
        #expect(code.version == 3 || code.version == 4)
    }

    @Test func finderPatternsAreDarkAtTheirCorners() throws {
        let code = try QRCode(text: url)
        let last = code.size - 1
        // Each 7x7 finder has a dark outer ring: check its four corners and its light inner ring.
        for (top, left) in [(0, 0), (0, last - 6), (last - 6, 0)] {
            for (dr, dc) in [(0, 0), (0, 6), (6, 0), (6, 6)] {
                #expect(code.isDark(row: top + dr, column: left + dc))
            }
            #expect(!code.isDark(row: top + 1, column: left + 1))
            #expect(code.isDark(row: top + 3, column: left + 3))
        }
        // Outside the symbol is quiet zone.
        #expect(!code.isDark(row: -1, column: 0))
        #expect(!code.isDark(row: 0, column: code.size))
    }

    @Test(arguments: [0, 1, 2, 4])
    func renderedLineCount(quiet: Int) throws {
        let code = try QRCode(text: url)
        let rendered = code.renderHalfBlocks(quietZone: quiet)
        let lines = rendered.split(separator: "\n", omittingEmptySubsequences: false)
        let span = code.size + 2 * quiet
        #expect(lines.count == (span + 1) / 2)
        #expect(lines.allSatisfy { $0.count == span })
        #expect(rendered.allSatisfy { "▀▄█ \n".contains($0) })
    }

    @Test func renderingMatchesModules() throws {
        let code = try QRCode(text: "fingerseal")
        let lines = code.renderHalfBlocks(quietZone: 0).split(separator: "\n").map(Array.init)
        for row in stride(from: 0, to: code.size, by: 2) {
            for column in 0..<code.size {
                let glyph: Character = switch (code.isDark(row: row, column: column),
                                               code.isDark(row: row + 1, column: column)) {
                case (true, true): "█"
                case (true, false): "▀"
                case (false, true): "▄"
                case (false, false): " "
                }
                #expect(lines[row / 2][column] == glyph)
            }
        }
    }

    @Test func emptyInputIsATypedError() {
        #expect(throws: QRError.emptyInput) { try QRCode(text: "") }
    }

    @Test func hugeInputIsATypedError() {
        let huge = String(repeating: "x", count: 3_500)
        #expect(throws: QRError.inputTooLarge(bytes: 3_500)) { try QRCode(text: huge) }
    }

    @Test func embeddedNULIsRefused() {
        #expect(throws: QRError.embeddedNUL) { try QRCode(text: "a\u{0}b") }
    }
}
