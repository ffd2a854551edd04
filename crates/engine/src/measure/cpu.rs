//! The generator's own CPU time, so a later stage can tell when the
//! generator rather than the server was the limit.

#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct CpuTimes {
    pub user_s: f64,
    pub system_s: f64,
}

fn seconds(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6
}

/// CPU time of the whole process (every thread) so far.
pub fn process_cpu() -> CpuTimes {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes into the struct we own.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return CpuTimes::default();
    }
    CpuTimes { user_s: seconds(ru.ru_utime), system_s: seconds(ru.ru_stime) }
}

impl CpuTimes {
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes { user_s: self.user_s - earlier.user_s, system_s: self.system_s - earlier.system_s }
    }
}

impl std::ops::Add for CpuTimes {
    type Output = CpuTimes;
    fn add(self, o: CpuTimes) -> CpuTimes {
        CpuTimes { user_s: self.user_s + o.user_s, system_s: self.system_s + o.system_s }
    }
}
