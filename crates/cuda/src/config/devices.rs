//! Which CUDA devices the backend opens ([`Devices`], the `devices` field of
//! [`crate::CudaConfig`]): every device the driver shows (the default), or a list of ordinals,
//! where an ordinal may repeat to open several logical shards on one card.
//!
//! The driver numbers the devices it shows from 0, after `CUDA_VISIBLE_DEVICES` has chosen and
//! ordered them; an ordinal here is always one of those numbers, so `CUDA_VISIBLE_DEVICES=2,3`
//! with `devices: [1]` opens the host's card 3. Counting is left to the driver, not done by
//! reading the variable, so that every form it accepts (indices, UUIDs, MIG instances) means here
//! what it means to every other CUDA program.

use chainsig_gpu::cudarc::driver::CudaContext;

/// The most entries a device list holds: one engine each (its own streams, pinned buffers and
/// copies of the tables), more than any host of eight GPUs needs even with logical shards.
pub const MAX_DEVICES: usize = 16;

/// Every visible device (the default; `null` in JSON), or the ordinals listed (a JSON array such
/// as `[0, 1]`; `[0, 0]` opens two logical shards on device 0, for testing the sharding on one
/// card). A fixed-size list, so that [`crate::CudaConfig`] stays `Copy`.
#[derive(Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Option<Vec<usize>>", into = "Option<Vec<usize>>")]
pub struct Devices {
    /// 0: every visible device.
    len: u8,
    ordinals: [u8; MAX_DEVICES],
}

impl Devices {
    /// Every device the driver shows.
    pub fn all() -> Devices {
        Devices::default()
    }

    /// Exactly these ordinals, in this order (repeats open logical shards of one device).
    pub fn list(ordinals: &[usize]) -> Result<Devices, String> {
        if ordinals.is_empty() {
            return Err("an empty list names no device (null opens every visible device)".into());
        }
        if ordinals.len() > MAX_DEVICES {
            return Err(format!(
                "{} entries, at most {MAX_DEVICES} are allowed",
                ordinals.len()
            ));
        }
        let mut out = Devices {
            len: ordinals.len() as u8,
            ..Devices::default()
        };
        for (slot, &o) in out.ordinals.iter_mut().zip(ordinals) {
            *slot = u8::try_from(o).map_err(|_| format!("ordinal {o} is not a device number"))?;
        }
        Ok(out)
    }

    /// The ordinals listed, or None for every visible device.
    pub fn named(&self) -> Option<Vec<usize>> {
        (self.len > 0).then(|| {
            self.ordinals[..self.len as usize]
                .iter()
                .map(|&o| o as usize)
                .collect()
        })
    }

    /// The ordinals to open when the driver shows `visible` devices: all of them in order, or the
    /// list, each entry checked against that count. An error says which entry and how many
    /// devices there are.
    pub fn resolve(&self, visible: usize) -> Result<Vec<usize>, String> {
        if visible == 0 {
            return Err(no_device());
        }
        match self.named() {
            None => Ok((0..visible).collect()),
            Some(list) => {
                if let Some((k, o)) = list.iter().enumerate().find(|(_, &o)| o >= visible) {
                    return Err(format!(
                        "devices[{k}] is {o}, but the driver shows {visible} device{} (ordinals from 0{})",
                        if visible == 1 { "" } else { "s" },
                        visible_note()
                    ));
                }
                Ok(list)
            }
        }
    }

    /// The ordinals to open on this machine ([`Devices::resolve`] over the driver's count).
    pub(crate) fn open_list(&self) -> Result<Vec<usize>, String> {
        let visible = CudaContext::device_count()
            .map_err(|e| format!("cannot count the CUDA devices: {e:?}"))?;
        self.resolve(usize::try_from(visible).unwrap_or(0))
    }
}

fn no_device() -> String {
    format!("the CUDA driver shows no device{}", visible_note())
}

/// What `CUDA_VISIBLE_DEVICES` is, for an error about counts (it is often the reason).
fn visible_note() -> String {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(v) => format!(
            "; CUDA_VISIBLE_DEVICES={}",
            chainsig_core::error::shorten(&v, 60)
        ),
        Err(_) => String::new(),
    }
}

impl TryFrom<Option<Vec<usize>>> for Devices {
    type Error = String;
    fn try_from(v: Option<Vec<usize>>) -> Result<Devices, String> {
        match v {
            None => Ok(Devices::all()),
            Some(list) => Devices::list(&list),
        }
    }
}

impl From<Devices> for Option<Vec<usize>> {
    fn from(d: Devices) -> Option<Vec<usize>> {
        d.named()
    }
}

impl std::fmt::Debug for Devices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.named() {
            None => f.write_str("all visible"),
            Some(list) => write!(f, "{list:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_keeps_its_order_and_repeats_and_refuses_what_names_no_device() {
        assert_eq!(Devices::all().named(), None);
        let d = Devices::list(&[1, 0, 0]).unwrap();
        assert_eq!(d.named(), Some(vec![1, 0, 0]));
        assert!(Devices::list(&[]).unwrap_err().contains("empty"));
        assert!(Devices::list(&[0; 17]).unwrap_err().contains("at most 16"));
        assert!(Devices::list(&[256]).unwrap_err().contains("256"));
        assert_eq!(format!("{:?}", Devices::all()), "all visible");
        assert_eq!(format!("{d:?}"), "[1, 0, 0]");
    }

    #[test]
    fn resolving_opens_every_visible_device_or_checks_each_entry() {
        assert_eq!(Devices::all().resolve(3).unwrap(), vec![0, 1, 2]);
        assert_eq!(
            Devices::list(&[0, 0]).unwrap().resolve(1).unwrap(),
            vec![0, 0]
        );
        let e = Devices::list(&[0, 2]).unwrap().resolve(2).unwrap_err();
        assert!(
            e.starts_with("devices[1] is 2, but the driver shows 2 devices"),
            "{e}"
        );
        assert!(Devices::all().resolve(0).unwrap_err().contains("no device"));
    }
}
