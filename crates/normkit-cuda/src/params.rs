//! The kernel parameters of a call: normkit-gpu-host fills the operand fields of the structs it
//! mirrors from kernels-common/nk_params.h (addresses, strides, dtypes, flags; the ownership of
//! every buffer was checked by normkit-core's validation) and says what the planner needs to
//! know of the call, which is the planner's input as it is ([`FwdCall`] / [`BwdCall`]); here the
//! measurement flag F_NOFULL is added, and [`KernelArg`] makes the structs a cudarc kernel
//! argument. The path-dependent fields (group, rows per CTA, slot, parts, splits, workspace
//! addresses) come from the plan, in launch.rs.

use cudarc::driver::DeviceRepr;
use normkit_core::{Backward, BackwardPlan, Forward, ForwardPlan, NormDesc};
use normkit_gpu_host::{bwd_params, fwd_params};

use crate::buffers::CudaBuffer;
use crate::plan::{BwdCall, FwdCall};

pub(crate) use normkit_gpu_host::params::{BwdParams, FwdParams, F_NOFULL, F_TRIGGER, F_WGLOBAL};

/// A kernel parameter struct as cudarc passes it: by value, the kernel's single argument.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct KernelArg<P>(pub P);

// SAFETY: both structs are #[repr(C)] plain old data (integers and floats only, no padding
// beyond what the identical C++ layout has; sizes and offsets asserted in normkit-gpu-host), and
// KernelArg is #[repr(transparent)] over them: passed by value as the kernel's single argument.
unsafe impl DeviceRepr for KernelArg<FwdParams> {}
// SAFETY: as above.
unsafe impl DeviceRepr for KernelArg<BwdParams> {}

/// The forward parameters from the operands, and the call as the planner sees it.
/// `extra_flags` are or-ed into the flags (F_NOFULL).
pub(crate) fn forward(desc: &NormDesc, a: &Forward<'_, CudaBuffer>, plan: &ForwardPlan, extra_flags: i32) -> (FwdParams, FwdCall) {
    let (mut p, i) = fwd_params(desc, a, plan);
    p.flags |= extra_flags;
    (p, i)
}

/// The backward parameters from the operands, and the call as the planner sees it.
/// `extra_flags` are or-ed into the flags (F_NOFULL).
pub(crate) fn backward(desc: &NormDesc, a: &Backward<'_, CudaBuffer>, plan: &BackwardPlan, extra_flags: i32) -> (BwdParams, BwdCall) {
    let (mut p, i) = bwd_params(desc, a, plan);
    p.flags |= extra_flags;
    (p, i)
}
