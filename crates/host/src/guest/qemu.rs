//! Booting a guest with qemu: the command line, the accelerator, and watching
//! the serial console until the guest powers off or a time limit passes.
//!
//! KVM is used only where the CPU advertises VMX or SVM and `/dev/kvm` opens;
//! a nested PVM `/dev/kvm` (no VMX/SVM flags) does not boot stock kernels, so
//! TCG (`-accel tcg -cpu max`) is used there. Under TCG the guest's CPU is many
//! times slower while every timeout is wall-clock, which the run record says.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{HostError, Result};

/// The accelerator a guest runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// Hardware virtualisation.
    Kvm,
    /// qemu's binary translator.
    Tcg,
}

impl Accel {
    /// `kvm` or `tcg`.
    pub fn as_str(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        }
    }
}

/// KVM where `cpuinfo` has the `vmx` or `svm` flag and `/dev/kvm` opens; TCG otherwise.
pub fn detect_accel(cpuinfo: &str, kvm_opens: bool) -> Accel {
    let hw = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if hw && kvm_opens {
        Accel::Kvm
    } else {
        Accel::Tcg
    }
}

/// One virtio disk: image, the serial the guest finds it by, and a bandwidth cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// Raw image file.
    pub image: PathBuf,
    /// virtio serial (`data`, `swap`, `results`, `tools`).
    pub serial: String,
    /// `throttling.bps-total`, bytes/s (None: unthrottled).
    pub bps: Option<u64>,
    /// Attached read-only.
    pub readonly: bool,
}

/// What a guest boots with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vm {
    /// Kernel image.
    pub kernel: PathBuf,
    /// Initramfs.
    pub initrd: PathBuf,
    /// Guest memory, MiB.
    pub memory_mib: u64,
    /// vCPUs.
    pub cpus: u32,
    /// Accelerator.
    pub accel: Accel,
    /// Disks, in order.
    pub disks: Vec<Disk>,
    /// Serial console log file.
    pub console: PathBuf,
    /// Extra kernel command-line words (`transparent_hugepage=never`).
    pub cmdline: Vec<String>,
}

/// The qemu arguments for `vm` (after the program name).
pub fn qemu_args(vm: &Vm) -> Vec<String> {
    let mut a: Vec<String> = vec!["-name".into(), "reclaimlab-guest".into()];
    match vm.accel {
        Accel::Kvm => a.extend(["-accel", "kvm", "-cpu", "host"].map(String::from)),
        Accel::Tcg => a.extend(["-accel", "tcg", "-cpu", "max"].map(String::from)),
    }
    a.extend([
        "-smp".into(),
        vm.cpus.to_string(),
        "-m".into(),
        format!("{}M", vm.memory_mib),
        "-kernel".into(),
        vm.kernel.display().to_string(),
        "-initrd".into(),
        vm.initrd.display().to_string(),
        "-append".into(),
        std::iter::once("console=ttyS0 panic=-1 loglevel=4 rdinit=/init")
            .chain(vm.cmdline.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        "-display".into(),
        "none".into(),
        "-monitor".into(),
        "none".into(),
        "-serial".into(),
        format!("file:{}", vm.console.display()),
        "-no-reboot".into(),
        "-nodefaults".into(),
    ]);
    for (i, d) in vm.disks.iter().enumerate() {
        let mut drive = format!(
            "file={},format=raw,if=none,id=d{i},cache=writeback",
            d.image.display()
        );
        if d.readonly {
            drive.push_str(",readonly=on");
        }
        if let Some(bps) = d.bps {
            drive.push_str(&format!(",throttling.bps-total={bps}"));
        }
        // qemu 7.2 takes the serial on the device, not on -drive.
        a.extend([
            "-drive".into(),
            drive,
            "-device".into(),
            format!("virtio-blk-pci,drive=d{i},serial={}", d.serial),
        ]);
    }
    a
}

/// A running guest; killed on drop.
pub struct Running {
    child: Child,
    /// The qemu pid.
    pub pid: u32,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts qemu (`nice`d: the host is shared) for `vm`.
pub fn start(qemu: &Path, vm: &Vm) -> Result<Running> {
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "10"]).arg(qemu).args(qemu_args(vm));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = cmd.spawn().map_err(|e| {
        HostError::with_fix(
            format!("cannot start {}: {e}", qemu.display()),
            "apt-get install -y qemu-system-x86",
        )
    })?;
    let pid = child.id();
    Ok(Running { child, pid })
}

/// How a boot ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The guest powered off after the job (`RECLAIMLAB-DONE` seen).
    Done,
    /// qemu exited without the job finishing.
    Exited(String),
    /// No `RECLAIMLAB-BOOTED` within the boot limit.
    NoBoot,
    /// The job did not finish within the run limit.
    Timeout,
    /// A signal asked us to stop.
    Stopped,
}

/// Waits for the guest: `RECLAIMLAB-BOOTED` on the console within `boot`,
/// then the end of qemu within `total`. Returns how it ended and the seconds
/// from start to boot and to the first workload second (if seen).
pub fn watch(
    r: &mut Running,
    console: &Path,
    boot: Duration,
    total: Duration,
    stop: &AtomicBool,
) -> (Ended, Option<f64>, Option<f64>) {
    let t0 = Instant::now();
    let mut booted = None;
    let mut workload = None;
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let text = fs::read_to_string(console).unwrap_or_default();
        if booted.is_none() && text.contains("RECLAIMLAB-BOOTED") {
            booted = Some(t0.elapsed().as_secs_f64());
        }
        if workload.is_none() && text.contains("RECLAIMLAB-WORKLOAD-START") {
            workload = Some(t0.elapsed().as_secs_f64());
        }
        match r.child.try_wait() {
            Ok(Some(st)) => {
                let e = if text.contains("RECLAIMLAB-DONE") {
                    Ended::Done
                } else {
                    let mut err = String::new();
                    if let Some(mut s) = r.child.stderr.take() {
                        use std::io::Read;
                        let _ = s.read_to_string(&mut err);
                    }
                    Ended::Exited(format!("{st}: {}", err.trim()))
                };
                return (e, booted, workload);
            }
            Ok(None) => {}
            Err(e) => return (Ended::Exited(e.to_string()), booted, workload),
        }
        let end = if stop.load(Ordering::Relaxed) {
            Some(Ended::Stopped)
        } else if booted.is_none() && t0.elapsed() > boot {
            Some(Ended::NoBoot)
        } else if t0.elapsed() > total {
            Some(Ended::Timeout)
        } else {
            None
        };
        if let Some(e) = end {
            let _ = r.child.kill();
            let _ = r.child.wait();
            return (e, booted, workload);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accel_needs_the_cpu_flag_and_the_device() {
        let vmx = "processor : 0\nflags\t\t: fpu vme vmx sse\n";
        let pvm = "processor : 0\nflags\t\t: fpu vme sse hypervisor\n";
        assert_eq!(detect_accel(vmx, true), Accel::Kvm);
        assert_eq!(detect_accel(vmx, false), Accel::Tcg);
        assert_eq!(detect_accel(pvm, true), Accel::Tcg);
    }

    #[test]
    fn command_line_puts_serial_on_the_device_and_throttles() {
        let vm = Vm {
            kernel: "/k".into(),
            initrd: "/i".into(),
            memory_mib: 2048,
            cpus: 2,
            accel: Accel::Tcg,
            disks: vec![
                Disk {
                    image: "/d.img".into(),
                    serial: "data".into(),
                    bps: Some(16 << 20),
                    readonly: false,
                },
                Disk {
                    image: "/t.img".into(),
                    serial: "tools".into(),
                    bps: None,
                    readonly: true,
                },
            ],
            console: "/c.log".into(),
            cmdline: vec!["transparent_hugepage=never".into()],
        };
        let a = qemu_args(&vm).join(" ");
        assert!(
            a.contains("rdinit=/init transparent_hugepage=never -display"),
            "{a}"
        );
        assert!(a.contains("-accel tcg -cpu max -smp 2 -m 2048M"), "{a}");
        assert!(a.contains("-drive file=/d.img,format=raw,if=none,id=d0,cache=writeback,throttling.bps-total=16777216 -device virtio-blk-pci,drive=d0,serial=data"), "{a}");
        assert!(
            a.contains(
                "id=d1,cache=writeback,readonly=on -device virtio-blk-pci,drive=d1,serial=tools"
            ),
            "{a}"
        );
        assert!(a.contains("-serial file:/c.log"));
    }
}
