import Glibc
import SystemKit

extension Options {
    /// Defaults overlaid with the system configuration file, read safely: a root-owned
    /// regular file, not writable by group or others, at most 64 KiB. A missing file means
    /// defaults. Returns the options and any warnings about unknown names.
    public static func loadSystem(path: String = Options.configPath) throws -> (Options, [String]) {
        var options = Options()
        guard let bytes = try readSystemFile(path, sizeLimit: Options.maxConfigSize) else { return (options, []) }
        let warnings = try options.applyConfigFile(String(decoding: bytes, as: UTF8.self), source: path)
        return (options, warnings)
    }

    /// A file the administrator owns (the configuration, the user map), read safely; nil
    /// when it does not exist.
    static func readSystemFile(_ path: String, sizeLimit: Int) throws -> [UInt8]? {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        let directoryPath = slash == path.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        let bytes: [UInt8]?
        do {
            let directory = try SafeDirectory(path: directoryPath, owner: 0)
            bytes = try directory.read(name, sizeLimit: sizeLimit)
        } catch let error as SystemError where error.code == ENOENT {
            bytes = nil
        } catch let error as UnsafeFileError {
            throw FingersealError(.badConfiguration, Messages.unsafeFile(error.description))
        } catch {
            throw FingersealError(.badConfiguration, Messages.systemFailure("read \(path)"), detail: "\(error)")
        }
        return bytes
    }
}
