//! Timing on the GPU: CUDA events ([`Event`]), a pair of them around the work one closure
//! enqueues on a stream ([`Stopwatch`]), and the median every benchmark reports ([`median`]).

use crate::error::{device_err, Error};
use cudarc::driver::{result, sys, CudaContext, CudaStream};
use std::sync::Arc;

/// A CUDA event from the driver's `result` layer, destroyed once when dropped.
pub struct Event(sys::CUevent);

impl Event {
    /// A fresh event of the context bound to this thread; `timing` false makes it cheaper for
    /// pure synchronisation (CU_EVENT_DISABLE_TIMING).
    pub fn new(timing: bool) -> Result<Self, Error> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        result::event::create(flags)
            .map(Event)
            .map_err(|e| device_err("cuEventCreate", e))
    }

    /// Records the event on stream `s`.
    pub fn record(&self, s: &CudaStream) -> Result<(), Error> {
        // SAFETY: both handles are live.
        unsafe { result::event::record(self.0, s.cu_stream()) }
            .map_err(|e| device_err("cuEventRecord", e))
    }

    /// Waits until the work before the event's last record has finished.
    pub fn sync(&self) -> Result<(), Error> {
        // SAFETY: live event.
        unsafe { result::event::synchronize(self.0) }
            .map_err(|e| device_err("cuEventSynchronize", e))
    }

    /// Milliseconds from this event to `end`, both recorded and completed.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32, Error> {
        // SAFETY: both recorded and completed.
        unsafe { result::event::elapsed(self.0, end.0) }
            .map_err(|e| device_err("cuEventElapsedTime", e))
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: destroyed once.
        let _ = unsafe { result::event::destroy(self.0) };
    }
}

/// A pair of timing events on one stream.
pub struct Stopwatch<'a> {
    start: Event,
    end: Event,
    stream: &'a CudaStream,
}

impl<'a> Stopwatch<'a> {
    /// Two fresh events of `ctx` (bound to this thread first), recorded on `stream`.
    pub fn new(ctx: &Arc<CudaContext>, stream: &'a CudaStream) -> Result<Stopwatch<'a>, Error> {
        ctx.bind_to_thread()
            .map_err(|e| device_err("bind context", e))?;
        Ok(Stopwatch {
            start: Event::new(true)?,
            end: Event::new(true)?,
            stream,
        })
    }

    /// Milliseconds the work `step` enqueues takes on the stream (waits for it to finish).
    pub fn time<E: From<Error>>(&self, step: impl FnOnce() -> Result<(), E>) -> Result<f64, E> {
        self.start.record(self.stream)?;
        step()?;
        self.end.record(self.stream)?;
        self.end.sync()?;
        Ok(f64::from(self.start.elapsed_ms(&self.end)?))
    }

    /// The median of `reps` timings of `step` after `warm` timed and discarded ones.
    pub fn median<E: From<Error>>(
        &self,
        warm: usize,
        reps: usize,
        mut step: impl FnMut() -> Result<(), E>,
    ) -> Result<f64, E> {
        let mut times = Vec::with_capacity(reps);
        for i in 0..warm + reps {
            let t = self.time(&mut step)?;
            if i >= warm {
                times.push(t);
            }
        }
        Ok(median(&mut times))
    }
}

/// The median (upper median for an even count) of `v`, which it sorts; 0 for an empty slice.
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_or_the_upper_middle() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0]), 3.0);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
    }
}
