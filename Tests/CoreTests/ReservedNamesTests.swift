import Glibc
import Testing
@testable import FingersealCore
@testable import TestSupport

/// The names provisioning never makes (issue 31 §5): each kind of policy file's grammar,
/// and the files as the broker reads them, from a tree of the test's own (`root`).
@Suite struct ReservedNamesTests {
    @Test func sudoersUserListsAndGroups() {
        let text = """
            # %commented ALL=(ALL) ALL
            Defaults env_reset
            Defaults:erin, %lecturers !lecture
            User_Alias OPS = carol, %ops : WEB = dave, \\
                %:webmasters
            Runas_Alias RUNNERS = frank
            Cmnd_Alias APT = /usr/bin/apt
            %admin ALL=(ALL) ALL
            %sudo   ALL=(ALL:ALL) ALL
            alice , !mallory,bob kiosk7, kiosk8 = (root : %wheel) NOPASSWD: /usr/sbin/grace
            #1000 ALL=(ALL) ALL
            OPS ALL = ALL # a comment naming nobody
            @includedir /etc/sudoers.d
            """
        #expect(PolicyNames.sudoers(text) == ["erin", "lecturers", "carol", "ops", "dave", "webmasters", "admin", "sudo",
                                              "alice", "mallory", "bob"])
    }

    @Test func polkitRulesAndLocalAuthority() {
        let rules = """
            polkit.addAdminRule(function(action, subject) { return ["unix-group:sudo", "unix-user:ivan"]; });
            polkit.addRule(function(action, subject) {
                if (subject.isInGroup( 'netdev' ) || subject.user == "kiosk" || subject.user==='judy') return polkit.Result.YES;
            });
            """
        #expect(PolicyNames.polkit(rules) == ["sudo", "ivan", "netdev", "kiosk", "judy"])
        #expect(PolicyNames.polkit("[Mount]\nIdentity=unix-group:plugdev;unix-user:karl\nResultAny=yes\n") == ["plugdev", "karl"])
        #expect(PolicyNames.polkit("[Configuration]\nAdminIdentities=unix-group:lpadmin\n") == ["lpadmin"])
    }

    @Test func theSecurityFilesAndPAMWheel() {
        #expect(PolicyNames.semicolonFields("xsh;tty*&!ttyp*;%gamers|!lena;Al0000-2400;floppy,audio # x\n", [2, 4])
                == ["gamers", "lena", "floppy", "audio"])
        #expect(PolicyNames.semicolonFields("login;tty*;!mona;!Wk0000-2400\n", [2]) == ["mona"])
        #expect(PolicyNames.access("+ : root (wheelers) nina@host : LOCAL\n- : ALL EXCEPT (staffers) @netgroup : ALL\n# + : oscar : ALL\n")
                == ["root", "wheelers", "nina", "staffers"])
        #expect(PolicyNames.limits("@audio - rtprio 95\n%cdrom hard nproc 20\npaul soft core 0\n* hard core 0\n1000: hard nproc 50\n")
                == ["audio", "cdrom", "paul"])
        #expect(PolicyNames.pamWheel("auth required pam_wheel.so deny group=nosu\n# auth sufficient pam_wheel.so group=quinn\n"
                                     + "auth [default=ignore] /lib/security/pam_wheel.so use_uid group=rosa\n") == ["nosu", "rosa"])
        #expect(PolicyNames.loginDefs("UID_MIN\t\t 2000\n#GID_MIN 5\nGID_MIN 3000\n") == (2000, 3000))
        #expect(PolicyNames.loginDefs("") == (1000, 1000))
    }

    /// The files as the broker reads them: a name in a sudoers.d file is reserved by it, a
    /// polkit directory owned by a system account is read, a file others may write makes the
    /// answer unknown (nothing may be made), and system and built-in names are reserved too.
    @Test(.enabled(if: geteuid() == 0)) func theFilesAsTheBrokerReadsThem() throws {
        let root = try TempDirectory()
        for directory in ["/etc", "/etc/sudoers.d", "/etc/polkit-1", "/etc/polkit-1/rules.d", "/etc/security"] {
            #expect(mkdir(root.path + directory, 0o755) == 0)
        }
        writeFile(root.path + "/etc/sudoers.d/kiosk", Array("%fspgroup ALL=(ALL) ALL\n".utf8), mode: 0o440)
        writeFile(root.path + "/etc/polkit-1/rules.d/50-kiosk.rules", Array(#"return ["unix-group:fsppolkit"];"#.utf8), mode: 0o644)
        #expect(chown(root.path + "/etc/polkit-1/rules.d", 101, 0) == 0 && chmod(root.path + "/etc/polkit-1/rules.d", 0o700) == 0)
        writeFile(root.path + "/etc/security/limits.conf", Array("@fsplimits hard nproc 20\n".utf8), mode: 0o644)
        #expect(ReservedNames.check("fspgroup", extra: [], root: root.path) == .reserved(by: root.path + "/etc/sudoers.d"))
        #expect(ReservedNames.check("fsppolkit", extra: [], root: root.path) == .reserved(by: root.path + "/etc/polkit-1/rules.d"))
        #expect(ReservedNames.check("fsplimits", extra: [], root: root.path) == .reserved(by: root.path + "/etc/security/limits.conf"))
        #expect(ReservedNames.check("fspfree", extra: [], root: root.path) == .free)
        #expect(ReservedNames.check("fspfree", extra: ["fspfree"], root: root.path) == .reserved(by: "provision_reserved"))
        #expect(ReservedNames.check("admin", extra: [], root: root.path) == .reserved(by: "built-in"))
        #expect(ReservedNames.check("daemon", extra: [], root: root.path) == .reserved(by: "a system account"))

        #expect(chmod(root.path + "/etc/security/limits.conf", 0o666) == 0)
        guard case let .unknown(path, _) = ReservedNames.check("fspfree", extra: [], root: root.path) else {
            Issue.record("a file others may write was read")
            return
        }
        #expect(path == root.path + "/etc/security/limits.conf")
    }
}
