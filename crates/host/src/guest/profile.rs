//! The guest kernel's own profile (`run --kernel … --guest-profile`): the
//! kernel booted with `profile=2` counts, on every timer tick that finds a
//! CPU in kernel mode, the instruction it interrupted (`profile_tick`,
//! kernel/profile.c) in buckets of 4 bytes of kernel text; the job resets
//! `/proc/profile` before the workload and copies it, with
//! `/proc/kallsyms`, after. Here the buckets become a table of kernel
//! functions by ticks, as `readprofile` prints it.
//!
//! What it can and cannot say: a tick that fires while interrupts are off
//! lands where they come back on (`_raw_spin_unlock_irq`,
//! `finish_task_switch`), so time under `spin_lock_irq` shows there; user
//! time and idle (`native_safe_halt`, `default_idle`) are not kernel work
//! of the run. Under qemu's TCG these ticks are the guest's own timer,
//! which keeps wall-clock time while the emulated CPU is slow.

/// `/proc/profile`: a `u32` bucket size in bytes (`1 << prof_shift`), then
/// one `u32` count per bucket from `_stext`. Returns (step, counts).
pub fn parse_proc_profile(bytes: &[u8]) -> Result<(u64, Vec<u32>), String> {
    if bytes.len() < 8 || !bytes.len().is_multiple_of(4) {
        return Err(format!(
            "{} bytes: not a /proc/profile (a 4-byte step and 4-byte counts)",
            bytes.len()
        ));
    }
    let word = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let step = u64::from(word(&bytes[..4]));
    if step == 0 || !step.is_power_of_two() {
        return Err(format!("bucket size {step}: not a power of two"));
    }
    Ok((step, bytes[4..].chunks_exact(4).map(word).collect()))
}

/// Text symbols of `/proc/kallsyms` (`t`/`T`/`w`/`W`), sorted by address,
/// and `_stext`'s address. Addresses of zero (kptr_restrict) are an error.
pub fn parse_kallsyms(text: &str) -> Result<(u64, Vec<(u64, String)>), String> {
    let mut syms = Vec::new();
    let mut stext = None;
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(a), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if name == "_stext" {
            stext = Some(addr);
        }
        if matches!(kind, "t" | "T" | "w" | "W") {
            syms.push((addr, name.to_string()));
        }
    }
    let stext = stext.ok_or("no _stext in /proc/kallsyms")?;
    if stext == 0 {
        return Err("/proc/kallsyms hides its addresses (kernel.kptr_restrict)".into());
    }
    syms.sort();
    Ok((stext, syms))
}

/// Kernel functions by ticks, most first, at most `n`, and the ticks in
/// all (`?` for ticks before the first symbol).
pub fn top_functions(
    step: u64,
    counts: &[u32],
    stext: u64,
    syms: &[(u64, String)],
    n: usize,
) -> (Vec<(String, u64)>, u64) {
    let mut by: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    let mut total = 0;
    for (i, &c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let addr = stext + i as u64 * step;
        let name = match syms.partition_point(|(a, _)| *a <= addr) {
            0 => "?",
            j => syms[j - 1].1.as_str(),
        };
        *by.entry(name).or_default() += u64::from(c);
        total += u64::from(c);
    }
    let mut v: Vec<(String, u64)> = by.into_iter().map(|(k, c)| (k.to_string(), c)).collect();
    // Most ticks first; equal counts by name, so that the table is stable.
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    (v, total)
}

/// The table `run` writes as `NAME.profile.txt`: ticks, share, function.
pub fn profile_table(profile: &[u8], kallsyms: &str, n: usize) -> Result<String, String> {
    let (step, counts) = parse_proc_profile(profile)?;
    let (stext, syms) = parse_kallsyms(kallsyms)?;
    let (top, total) = top_functions(step, &counts, stext, &syms, n);
    if total == 0 {
        return Err("no ticks counted".into());
    }
    let mut s = format!(
        "# the guest kernel's profile (profile=2): {total} ticks in kernel mode, the {} functions with most\n# ticks   share  function\n",
        top.len()
    );
    for (name, c) in top {
        s.push_str(&format!(
            "{c:7} {:6.2}%  {name}\n",
            100.0 * c as f64 / total as f64
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(step: u32, counts: &[u32]) -> Vec<u8> {
        std::iter::once(step)
            .chain(counts.iter().copied())
            .flat_map(u32::to_le_bytes)
            .collect()
    }

    const KALLSYMS: &str = "ffffffff81000000 T _stext\n\
        ffffffff81000000 T startup_64\n\
        ffffffff81000010 t read_hpet\n\
        ffffffff81000020 T clear_page_erms\n\
        ffffffff81000030 D some_data\n";

    #[test]
    fn ticks_go_to_the_function_that_holds_the_address() {
        // Buckets of 4 bytes: 0..4 startup_64, 4..8 read_hpet, 8.. clear_page_erms.
        let p = profile(4, &[1, 0, 0, 0, 5, 2, 0, 0, 3]);
        let t = profile_table(&p, KALLSYMS, 10).unwrap();
        assert!(t.contains("11 ticks"), "{t}");
        let lines: Vec<&str> = t.lines().skip(2).collect();
        assert!(
            lines[0].ends_with("read_hpet") && lines[0].trim_start().starts_with('7'),
            "{t}"
        );
        assert!(lines[1].ends_with("clear_page_erms"), "{t}");
        assert!(lines[2].ends_with("startup_64"), "{t}");
    }

    #[test]
    fn bad_input_is_named() {
        assert!(profile_table(&[1, 2, 3], KALLSYMS, 5)
            .unwrap_err()
            .contains("3 bytes"));
        assert!(profile_table(&profile(3, &[1]), KALLSYMS, 5)
            .unwrap_err()
            .contains("power of two"));
        let hidden = KALLSYMS.replace("ffffffff81000000 T _stext", "0000000000000000 T _stext");
        assert!(profile_table(&profile(4, &[1]), &hidden, 5)
            .unwrap_err()
            .contains("kptr_restrict"));
        assert!(profile_table(&profile(4, &[0, 0]), KALLSYMS, 5)
            .unwrap_err()
            .contains("no ticks"));
        assert!(profile_table(&profile(4, &[1]), "", 5)
            .unwrap_err()
            .contains("_stext"));
    }
}
