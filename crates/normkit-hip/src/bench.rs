//! [`BenchBackend`] for [`HipBackend`]: the device description, the copy ceiling
//! (device-to-device copies) and call timing between two HIP events.

use crate::ffi::{attr, DevicePtr, Event};
use crate::result::{self, device_error};
use crate::{HipBackend, BACKEND};
use normkit_core::{BenchBackend, DType, DeviceInfo, Result};

/// A pair of HIP events, destroyed on drop.
struct Events<'a> {
    api: &'a crate::ffi::Api,
    start: Event,
    stop: Event,
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: both events were created by `HipBackend::events` from this Api (or are null
        // where a creation failed, which hipEventDestroy rejects harmlessly) and are destroyed
        // once, here. Errors cannot be reported from drop.
        unsafe {
            let _ = result::event_destroy(self.api, self.start);
            let _ = result::event_destroy(self.api, self.stop);
        }
    }
}

impl HipBackend {
    fn events(&self) -> Result<Events<'_>> {
        let api = &self.ctx.api;
        let mut ev = Events { api, start: std::ptr::null_mut(), stop: std::ptr::null_mut() };
        ev.start = result::event_create(api).map_err(device_error("timing"))?;
        ev.stop = result::event_create(api).map_err(device_error("timing"))?;
        Ok(ev)
    }

    /// Seconds between the two events after running `body` between them.
    fn time(&self, ev: &Events<'_>, body: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
        let api = &self.ctx.api;
        let s = self.ctx.stream;
        // SAFETY: events and stream are live handles of this context.
        unsafe { result::event_record(api, ev.start, s) }.map_err(device_error("timing"))?;
        body()?;
        // SAFETY: as above.
        unsafe { result::event_record(api, ev.stop, s) }.map_err(device_error("timing"))?;
        // SAFETY: as above.
        unsafe { result::event_synchronize(api, ev.stop) }.map_err(device_error("timing"))?;
        // SAFETY: as above; both events have completed.
        let ms = unsafe { result::event_elapsed_time(api, ev.start, ev.stop) }.map_err(device_error("timing"))?;
        Ok(f64::from(ms) * 1e-3)
    }
}

impl BenchBackend for HipBackend {
    fn device_info(&self) -> DeviceInfo {
        let api = &self.ctx.api;
        // Queries that fail read as 0: a description, not a contract.
        let attribute = |a: i32| result::device_get_attribute(api, a, self.ctx.device).unwrap_or(0);
        let rt = result::runtime_get_version(api).unwrap_or(0);
        let mem = result::device_total_mem(api, self.ctx.device).unwrap_or(0);
        DeviceInfo {
            backend: BACKEND.into(),
            name: format!("{} ({})", self.ctx.name, self.ctx.arch),
            compute_units: self.ctx.cus,
            driver: format!("HIP runtime {} ({})", rt, api.soname),
            clocks: format!(
                "peak SCLK {} MHz, peak MCLK {} MHz (hipDeviceGetAttribute; not the clock under load)",
                attribute(attr::CLOCK_RATE) / 1000,
                attribute(attr::MEMORY_CLOCK_RATE) / 1000
            ),
            memory_bytes: mem as u64,
            cache_bytes: attribute(attr::L2_CACHE_SIZE).max(0) as u64,
        }
    }

    fn copy_gbps(&self, bytes: usize) -> Result<f64> {
        let bytes = bytes.max(4);
        let src = self.alloc_buffer(DType::F32, bytes / 4)?;
        let dst = self.alloc_buffer(DType::F32, bytes / 4)?;
        let n = (bytes / 4) * 4;
        let api = &self.ctx.api;
        let s = self.ctx.stream;
        let copy = || -> Result<()> {
            // SAFETY: both buffers hold n bytes and live until the end of this function, after
            // the stream was drained by the timing.
            unsafe { result::memcpy_dtod_async(api, dst.ptr as DevicePtr, src.ptr as DevicePtr, n, s) }
                .map_err(device_error("copy ceiling"))
        };
        // SAFETY: fills src (n bytes) so the copy moves initialised memory.
        unsafe { result::memset_async(api, src.ptr as DevicePtr, 0, n, s) }.map_err(device_error("copy ceiling"))?;
        copy()?;
        let ev = self.events()?;
        let reps = 10;
        let secs = self.time(&ev, &mut || {
            for _ in 0..reps {
                copy()?;
            }
            Ok(())
        })?;
        Ok(2.0 * n as f64 * reps as f64 / secs / 1e9)
    }

    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        // Back-to-back launches between two events (no graph capture: hipGraph support through
        // the module API is left for when this can be run on a device).
        for i in 0..calls {
            f(i)?;
        }
        let ev = self.events()?;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let secs = self.time(&ev, &mut || {
                for i in 0..calls {
                    f(i)?;
                }
                Ok(())
            })?;
            out.push(secs / calls.max(1) as f64);
        }
        Ok(out)
    }
}
