//! [`BenchBackend`] for CUDA: device facts, the device-to-device copy ceiling, and CUDA-graph
//! timing of back-to-back calls.

use cudarc::driver::sys;
use normkit_core::{BenchBackend, DType, DeviceInfo, NormError, NormKernel, Result};

use crate::startup::dev_err;
use crate::CudaBackend;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The kernel driver's version from /proc (e.g. "580.159.04"), if readable.
fn kernel_driver_version() -> Option<String> {
    let s = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = s.lines().next()?;
    line.split_whitespace().find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.')).map(str::to_owned)
}

impl CudaBackend {
    fn attr(&self, a: sys::CUdevice_attribute) -> i64 {
        self.dev.ctx.attribute(a).map(i64::from).unwrap_or(0)
    }

    fn events(&self) -> Result<(cudarc::driver::CudaEvent, cudarc::driver::CudaEvent)> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok((
            self.dev.ctx.new_event(flags).map_err(dev_err("event creation"))?,
            self.dev.ctx.new_event(flags).map_err(dev_err("event creation"))?,
        ))
    }
}

impl BenchBackend for CudaBackend {
    fn device_info(&self) -> DeviceInfo {
        let mut v = 0i32;
        // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
        let _ = unsafe { sys::cuDriverGetVersion(&mut v) };
        let api = format!("CUDA {}.{}", v / 1000, (v % 1000) / 10);
        let driver = match kernel_driver_version() {
            Some(k) => format!("{k} ({api})"),
            None => api,
        };
        let sm_khz = self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
        let mem_khz = self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
        DeviceInfo {
            backend: "cuda".into(),
            name: self.dev.name.clone(),
            compute_units: self.dev.facts.sms,
            driver,
            clocks: format!(
                "max SM clock {} MHz, memory clock {} MHz, compute capability {}.{}",
                sm_khz / 1000,
                mem_khz / 1000,
                self.dev.cc.0,
                self.dev.cc.1
            ),
            memory_bytes: self.dev.ctx.total_mem().map(|b| b as u64).unwrap_or(0),
            cache_bytes: self.attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as u64,
        }
    }

    fn copy_gbps(&self, bytes: usize) -> Result<f64> {
        let elems = bytes.div_ceil(4);
        let src = self.alloc(DType::F32, elems)?;
        let dst = self.alloc(DType::F32, elems)?;
        let nbytes = elems * 4;
        for _ in 0..3 {
            self.copy_d2d(dst.device_ptr(), src.device_ptr(), nbytes)?;
        }
        let (e0, e1) = self.events()?;
        let mut times = Vec::new();
        for _ in 0..15 {
            e0.record(&self.dev.stream).map_err(dev_err("event record"))?;
            self.copy_d2d(dst.device_ptr(), src.device_ptr(), nbytes)?;
            e1.record(&self.dev.stream).map_err(dev_err("event record"))?;
            e1.synchronize().map_err(dev_err("event sync"))?;
            let ms = e0.elapsed_ms(&e1).map_err(dev_err("event timing"))? as f64;
            times.push(ms * 1e-3);
        }
        Ok(2.0 * nbytes as f64 / median(times) / 1e9)
    }

    fn time_calls(&self, calls: usize, reps: usize, f: &mut dyn FnMut(usize) -> Result<()>) -> Result<Vec<f64>> {
        if calls == 0 {
            return Ok(Vec::new());
        }
        // Warm-up outside the capture: loads nothing lazily, but sizes the workspace (which
        // cannot grow while the stream is being captured).
        for i in 0..calls {
            f(i)?;
        }
        self.synchronize()?;
        self.dev.stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).map_err(dev_err("graph capture"))?;
        let mut captured = Ok(());
        for i in 0..calls {
            captured = f(i);
            if captured.is_err() {
                break;
            }
        }
        let graph = self.dev.stream.end_capture(sys::CUgraphInstantiate_flags(0)).map_err(dev_err("graph capture"))?;
        captured?;
        let graph = graph.ok_or(NormError::Unsupported { backend: "cuda", what: "an empty captured graph".into() })?;
        graph.upload().map_err(dev_err("graph upload"))?;
        graph.launch().map_err(dev_err("graph launch"))?;
        self.synchronize()?;
        let (e0, e1) = self.events()?;
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            e0.record(&self.dev.stream).map_err(dev_err("event record"))?;
            graph.launch().map_err(dev_err("graph launch"))?;
            e1.record(&self.dev.stream).map_err(dev_err("event record"))?;
            e1.synchronize().map_err(dev_err("event sync"))?;
            let ms = e0.elapsed_ms(&e1).map_err(dev_err("event timing"))? as f64;
            out.push(ms * 1e-3 / calls as f64);
        }
        Ok(out)
    }
}
