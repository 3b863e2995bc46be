import Localization

/// The configuration: its options and sections, what the administrator fixes, the client secret
/// file it names. The sentences only the broker says are in the broker
/// (Sources/Broker/Messages/ConfigurationMessages.swift).
extension Messages {
    // Configuration
    public static func badOption(_ option: String, _ why: String) -> String { tr("The option %1$s is not valid: %2$s.", option, embedded(why)) }
    public static func unknownOption(_ option: String) -> String { tr("Unknown option %1$s was ignored.", option) }
    public static func unknownSection(_ section: String) -> String { tr("Unknown section [%1$s] was ignored, with its settings.", section) }
    public static func badServiceSection(_ service: String) -> String {
        tr("The section [service %1$s] is not valid: it needs one PAM service name, without spaces or commas.", service)
    }
    public static func fileOnlyInServiceSection(_ option: String, _ service: String) -> String {
        tr("The option %1$s in the section [service %2$s] was ignored: it is set for the whole machine, at the top of the file, not per service.",
           option, service)
    }

    // Fleet configuration: the system file, what it fixes, the client secret it names
    public static func unsafeConfigFile(_ why: String) -> String {
        tr("Fingerseal refused its configuration because %1$s. The file must be root's and writable by root only.", embedded(why))
    }
    public static func fixedOnlyInFile(_ source: String) -> String {
        tr("The option fixed in %1$s was ignored: only the configuration file can fix options.", source)
    }
    public static func fixedOptionIgnored(_ option: String, _ source: String) -> String {
        tr("The option %1$s in %2$s was ignored: the administrator fixed it in the configuration file.", option, source)
    }
    public static func fileOnlyOption(_ option: String, _ source: String) -> String {
        tr("The option %1$s in %2$s was ignored: only the configuration file can set it.", option, source)
    }
    public static var badTPMMode: String { tr("The option tpm is not valid: use auto, require or off.") }
    public static var badTPMTCTI: String { tr("The option tpm_tcti is not valid: it needs a TCTI such as device:/dev/tpmrm0.") }
    public static var badTPMPCRs: String { tr("The option tpm_pcrs is not valid: it needs PCR numbers from 0 to 23 separated by commas, or none.") }
    public static func clientSecretFileMissing(_ path: String) -> String {
        tr("The client secret file %1$s named in the configuration does not exist.", path)
    }
    public static func clientSecretFileReadable(_ path: String, _ mode: UInt32) -> String {
        tr("The client secret file %1$s can be read by group or others (mode %2$s). Make it readable by root only (chmod 600).", path, String(mode & 0o7777, radix: 8))
    }
    public static func unsafeClientSecretFile(_ why: String) -> String {
        tr("Fingerseal refused the client secret file because %1$s. It must be root's, in a directory only root can write.", embedded(why))
    }
    public static func clientSecretFileEmpty(_ path: String) -> String { tr("The client secret file %1$s is empty.", path) }
}
