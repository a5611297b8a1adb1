"""Pods and Slurm jobs in a fleet read from Prometheus answers: dcgm-exporter's
pod labels and Hostname, vramscope's own owner labels, hostile label values."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vramscope.core.processes.owner_labels import OWNER_LABELS, owner_values, owners_from
from vramscope.core.samples import Container, ProcessInfo
from vramscope.core.processes.slurm_jobs import SlurmJob
from vramscope.core.status.status_report import frame_to_dict
from vramscope.sources.remote.fleet_owners import POD_PID
from vramscope.sources.remote.prometheus import PrometheusSource

MiB = 1 << 20
T = 1_700_000_000.0


def dcgm(name, mib, gpu="0", instance="10.0.3.7:9400", host="node-a", **pod):
    labels = {
        "__name__": name,
        "instance": instance,
        "gpu": gpu,
        "UUID": f"GPU-{gpu}",
        "Hostname": host,
        **pod,
    }
    return {"metric": labels, "value": [T, str(mib)]}


def fb(gpu, used, free, **kw):
    return [dcgm("DCGM_FI_DEV_FB_USED", used, gpu, **kw), dcgm("DCGM_FI_DEV_FB_FREE", free, gpu, **kw)]


def pod(p, ns="ml", c="main"):
    return {"pod": p, "namespace": ns, "container": c}


def test_dcgm_machines_are_named_by_hostname_and_gpus_by_their_pod():
    vector = [
        *fb("0", 30_000, 50_000, **pod("trainer-0")),
        # GPU 1 time-sliced between two pods: dcgm-exporter repeats the GPU's figure per pod
        *fb("1", 20_000, 60_000, **pod("infer-a", "serving")),
        *fb("1", 20_000, 60_000, **pod("infer-b", "serving")),
        *fb("2", 0, 80_000),  # no pod holds it
        {"metric": {"__name__": "up", "instance": "10.0.3.7:9400"}, "value": [T, "1"]},
    ]
    frame = PrometheusSource("http://127.0.0.1:1").fleet_frame(vector, T)
    assert [h.host for h in frame.hosts] == ["node-a"]
    g0, g1, g2 = frame.gpus
    (holder,) = g0.processes
    assert holder.pid == POD_PID and holder.used == 30_000 * MiB
    assert holder.info.container == Container("cri", None, name="main", pod="trainer-0", namespace="ml")
    assert g1.processes == ()  # the GPU's memory cannot be split among the pods sharing it
    why = g1.reason("process_memory")
    assert "pod serving/infer-a · container main" in why and "pod serving/infer-b · container main" in why
    assert g2.processes == () and g2.reason("process_memory") is None
    doc = frame_to_dict(frame)
    assert [(p["key"], p["used"]) for p in doc["pods"]] == [("ml/trainer-0", 30_000 * MiB)]


def test_a_host_whose_exporter_is_down_is_marked_by_its_hostname():
    source = PrometheusSource("http://127.0.0.1:1")
    source.fleet_frame(fb("0", 1, 1, **pod("p")), T)
    frame = source.fleet_frame(
        [{"metric": {"__name__": "up", "instance": "10.0.3.7:9400"}, "value": [T, "0"]}], T
    )
    assert [(h.host, h.state) for h in frame.hosts] == [("node-a", "down")]
    assert source._hosts.selectors("node-a") == ['{Hostname="node-a"}']
    assert source._hosts.selectors("new:9100") == ['{instance="new:9100"}', '{Hostname="new:9100"}']
    assert source._hosts.selectors('x"}') == ['{instance="x\\"}"}', '{Hostname="x\\"}"}']


def test_vramscopes_own_series_carry_user_pod_and_job():
    labels = {
        "__name__": "vramscope_process_memory_used_bytes",
        "instance": "gpu1:9464",
        "gpu": "0",
        "pid": "4242",
        "process": "python3",
        "user": "alice",
        "container_runtime": "containerd",
        "container": "trainer",
        "pod": "trainer-7f9c",
        "namespace": "ml-team",
        "slurm_job": "12345",
        "slurm_job_name": "train-llama",
    }
    gpu = {"__name__": "vramscope_gpu_memory_used_bytes", "instance": "gpu1:9464", "gpu": "0"}
    frame = PrometheusSource("http://127.0.0.1:1").fleet_frame(
        [{"metric": gpu, "value": [T, str(2 << 30)]}, {"metric": labels, "value": [T, str(1 << 30)]}], T
    )
    (p,) = frame.gpus[0].processes
    assert p.used == 1 << 30 and p.info.user == "alice"
    assert p.info.container == Container(
        "containerd", None, name="trainer", pod="trainer-7f9c", namespace="ml-team"
    )
    assert p.info.slurm == SlurmJob(12345, user="alice", name="train-llama")


def test_hostile_owner_labels_name_nothing_or_are_kept_as_text():
    assert owners_from({"slurm_job": "12x"}) == {}
    assert owners_from({"slurm_job": "99999999999"}) == {}  # past a job id's 32 bits' digits
    assert owners_from({"slurm_job": "١٢"}) == {}  # non-ASCII digits
    odd = owners_from({"pod": "p\x1b[2J", "namespace": ""})
    assert odd["container"].pod == "p\x1b[2J" and odd["container"].namespace is None


names = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)


@given(
    user=names,
    pod=st.none() | names,
    namespace=names,
    container=names,
    job=st.none() | st.integers(1, 4_294_967_295),
    job_name=st.none() | names,
)
def test_owner_labels_read_back_what_the_exporter_wrote(user, pod, namespace, container, job, job_name):
    info = ProcessInfo(
        pid=1,
        user=user,
        container=Container(
            "containerd", "a" * 64, name=container, pod=pod, namespace=namespace if pod else None
        ),
        slurm=SlurmJob(job, name=job_name, user=user) if job is not None else None,
    )
    back = owners_from(dict(zip(OWNER_LABELS, owner_values(info))))
    assert back["user"] == user
    assert (back["container"].pod, back["container"].name) == (pod, container)
    assert back.get("slurm") == (SlurmJob(job, name=job_name, user=user) if job is not None else None)
