#!/usr/bin/env python3
"""Checks the Kubernetes manifests of deploy/kubernetes offline, and deploy/mirror-shard:

    python3 scripts/check/check-deploy.py [--job-schema mirror.schema.json] [DIR]

- Every YAML document of DIR (default deploy/kubernetes) but kustomization.yaml is read
  against the official Kubernetes API models (the `kubernetes` Python client): a field
  the model does not have (a misspelt or misplaced key), a value of the wrong type and a
  required field left out are errors, and so is a value outside the enum of a policy,
  mode or action field.
- What the design depends on: the CronJob's Indexed Job with completions == parallelism ==
  the --shards of `mirror run` and of `mirror publish`, backoffLimitPerIndex and
  maxFailedIndexes set, podReplacementPolicy Failed, a podFailurePolicy failing the index at
  once on exit 2, concurrencyPolicy Forbid, restartPolicy Never, terminationGracePeriodSeconds
  of 60 or more, `--state s3://…`, --output on an emptyDir, a read-only root file system and
  a non-root user; and that the names agree: the job files in the args are keys of the
  mounted ConfigMap, the Secret, ServiceAccount and ConfigMap referred to are in DIR, every
  ${VAR} of the job files is set, the image's user and mirror-shard match the Containerfile.
- kustomization.yaml lists every manifest but the example Secret, and, where kubectl is
  installed, `kubectl kustomize DIR` renders (offline) documents that pass the same checks.
- deploy/mirror-shard, run with a stand-in for mirror: publish runs after exit 0 and 75 and
  not after 1, 2, 3 or 143, and SIGTERM reaches the running `mirror run`.
- The CronJob as shipped, for real: every index of its Indexed Job runs the container's
  command (deploy/mirror-shard with the real mirror binary, .build/debug/mirror or
  --mirror PATH) on the ConfigMap's own job files, with the container's env and the
  Secret's keys, against moto's S3 (scripts/auth-servers/s3_server.py) for the bucket and
  the sample API (scripts/sample-api.py) for API_BASE, both on 127.0.0.1, each index with
  an empty output folder of its own; every index must exit 0, shards with no jobs too, and
  the published top-level manifest must name exactly the shards that have jobs.
- With --job-schema (what `mirror schema` prints), the ConfigMap's job files are validated
  against it with jsonschema.

Needs PyYAML and kubernetes (pinned in scripts/auth-servers/requirements.txt); run with a
python that lacks them, it runs itself again with the venv of scripts/auth-servers/setup.sh.
Exits 1 on any problem, naming each.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import yaml
    import kubernetes
    import kubernetes.client
except ImportError:
    if os.environ.get("MIRROR_CHECK_DEPLOY_VENV"):
        raise
    python = subprocess.run([os.path.join(ROOT, "scripts/auth-servers/setup.sh")],
                            stdout=subprocess.PIPE, text=True, check=True).stdout.strip()
    os.environ["MIRROR_CHECK_DEPLOY_VENV"] = "1"
    os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])

problems = []


def problem(where, message):
    problems.append(f"{where}: {message}")


# --- The Kubernetes API models ---------------------------------------------------------------

PRIMITIVES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}
# The enums of the fields these manifests use (the API's, which the client's models leave
# unchecked): (model, field) -> allowed values.
ENUMS = {
    ("V1CronJobSpec", "concurrencyPolicy"): {"Allow", "Forbid", "Replace"},
    ("V1JobSpec", "completionMode"): {"NonIndexed", "Indexed"},
    ("V1JobSpec", "podReplacementPolicy"): {"TerminatingOrFailed", "Failed"},
    ("V1PodFailurePolicyRule", "action"): {"FailJob", "FailIndex", "Ignore", "Count"},
    ("V1PodFailurePolicyOnExitCodesRequirement", "operator"): {"In", "NotIn"},
    ("V1PodFailurePolicyOnPodConditionsPattern", "status"): {"True", "False", "Unknown"},
    ("V1PodSpec", "restartPolicy"): {"Always", "OnFailure", "Never"},
    ("V1Container", "imagePullPolicy"): {"Always", "IfNotPresent", "Never"},
    ("V1SeccompProfile", "type"): {"RuntimeDefault", "Localhost", "Unconfined"},
}


def join(where, key):
    return f"{where}{key}" if where.endswith(": ") else f"{where}.{key}"


def check_model(value, type_name, where):
    """Checks value (parsed YAML) against a type of the Python client's models, strictly:
    the client's own deserializer silently drops fields it does not know."""
    if value is None:
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            problem(where, f"must be a list, not {type(value).__name__}")
            return
        for index, item in enumerate(value):
            check_model(item, type_name[5:-1], f"{where}[{index}]")
    elif type_name.startswith("dict("):
        if not isinstance(value, dict):
            problem(where, f"must be a mapping, not {type(value).__name__}")
            return
        item_type = re.match(r"dict\(([^,]*), (.*)\)", type_name).group(2)
        for key, item in value.items():
            check_model(item, item_type, join(where, key))
    elif type_name in PRIMITIVES:
        wanted = PRIMITIVES[type_name]
        if not isinstance(value, wanted) or (isinstance(value, bool) and type_name != "bool"):
            hint = " (quote it)" if type_name == "str" else ""
            problem(where, f"must be {type_name}, not {type(value).__name__} {value!r}{hint}")
    elif type_name in ("object", "datetime", "date"):
        pass
    else:
        model = getattr(kubernetes.client, type_name)
        if not isinstance(value, dict):
            problem(where, f"must be a mapping ({type_name}), not {type(value).__name__}")
            return
        fields = {json_name: attribute for attribute, json_name in model.attribute_map.items()}
        for key, item in value.items():
            if key not in fields:
                problem(join(where, key), f"{type_name} has no field '{key}'")
                continue
            check_model(item, model.openapi_types[fields[key]], join(where, key))
            allowed = ENUMS.get((type_name, key))
            if allowed and item not in allowed:
                problem(join(where, key), f"{item!r} is none of {', '.join(sorted(allowed))}")


def model_name(document):
    """The client's model class name for a document's apiVersion and kind: V1CronJob."""
    version = str(document.get("apiVersion", "")).split("/")[-1]
    name = version[:1].upper() + version[1:] + str(document.get("kind", ""))
    return name if hasattr(kubernetes.client, name) else None


def check_document(document, where):
    name = model_name(document)
    if name is None:
        problem(where, f"no Kubernetes model for apiVersion {document.get('apiVersion')!r}, "
                       f"kind {document.get('kind')!r}")
        return
    check_model(document, name, where + ": ")
    # The client's own deserializer, with client-side validation: required fields and enums.
    client = kubernetes.client.ApiClient()
    try:
        client._ApiClient__deserialize(document, name)
    except (ValueError, TypeError) as error:
        problem(where, f"{name}: {error}")


# --- What the design depends on --------------------------------------------------------------

def option(arguments, name):
    """The value of --name (as --name=V or --name V) in a list of arguments, else None."""
    for index, argument in enumerate(arguments):
        if argument.startswith(name + "="):
            return argument[len(name) + 1:]
        if argument == name and index + 1 < len(arguments):
            return arguments[index + 1]
    return None


def seconds(duration):
    match = re.fullmatch(r"(\d+)(ms|s|m|h|d)", duration or "")
    if not match:
        return None
    return int(match.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def check_cronjob(cronjob, where, documents):
    spec = cronjob.get("spec") or {}
    if spec.get("concurrencyPolicy") != "Forbid":
        problem(where, f"spec.concurrencyPolicy is {spec.get('concurrencyPolicy')!r}, not Forbid: "
                       "two runs of one shard would meet")
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        if spec.get(field) is None:
            problem(where, f"spec.{field} is not set")
    job = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    at = "spec.jobTemplate.spec"
    if job.get("completionMode") != "Indexed":
        problem(where, f"{at}.completionMode is {job.get('completionMode')!r}, not Indexed: "
                       "no pod would get JOB_COMPLETION_INDEX")
    completions, parallelism = job.get("completions"), job.get("parallelism")
    if not isinstance(completions, int) or completions < 1:
        problem(where, f"{at}.completions must be the shard count, not {completions!r}")
    if parallelism != completions:
        problem(where, f"{at}.parallelism is {parallelism!r}, completions {completions!r}: "
                       "every shard runs at once, so they must agree")
    per_index = job.get("backoffLimitPerIndex")
    if not isinstance(per_index, int) or per_index < 1:
        problem(where, f"{at}.backoffLimitPerIndex must be set (1 or more), not {per_index!r}")
    failed_indexes = job.get("maxFailedIndexes")
    if not isinstance(failed_indexes, int):
        problem(where, f"{at}.maxFailedIndexes is not set")
    elif isinstance(completions, int) and not 0 <= failed_indexes <= completions:
        problem(where, f"{at}.maxFailedIndexes is {failed_indexes}, outside 0 to completions ({completions})")
    if job.get("podReplacementPolicy") != "Failed":
        problem(where, f"{at}.podReplacementPolicy is {job.get('podReplacementPolicy')!r}, not Failed: "
                       "a replacement would start beside a pod still pushing its shard")
    rules = ((job.get("podFailurePolicy") or {}).get("rules")) or []
    fail_index_codes = set()
    for index, rule in enumerate(rules):
        codes = rule.get("onExitCodes") or {}
        if codes.get("operator") == "In":
            if rule.get("action") == "FailIndex":
                fail_index_codes.update(codes.get("values") or [])
            if 0 in (codes.get("values") or []):
                problem(where, f"{at}.podFailurePolicy.rules[{index}]: exit code 0 is not a failure")
        if rule.get("action") == "FailIndex" and per_index is None:
            problem(where, f"{at}.podFailurePolicy.rules[{index}]: FailIndex needs backoffLimitPerIndex")
    if 2 not in fail_index_codes:
        problem(where, f"{at}.podFailurePolicy has no FailIndex rule for exit code 2 (a config "
                       "error): every retry would fail the same way")

    pod = ((job.get("template") or {}).get("spec")) or {}
    at = "spec.jobTemplate.spec.template.spec"
    if pod.get("restartPolicy") != "Never":
        problem(where, f"{at}.restartPolicy is {pod.get('restartPolicy')!r}, not Never "
                       "(podFailurePolicy and backoffLimitPerIndex need it)")
    grace = pod.get("terminationGracePeriodSeconds")
    if not isinstance(grace, int) or grace < 60:
        problem(where, f"{at}.terminationGracePeriodSeconds is {grace!r}: at least 60, so that a "
                       "stopped run pushes its shard")
    pod_security = pod.get("securityContext") or {}
    containers = pod.get("containers") or []
    names = {container.get("name") for container in containers}
    for index, rule in enumerate(rules):
        name = (rule.get("onExitCodes") or {}).get("containerName")
        if name is not None and name not in names:
            problem(where, f"{at}: podFailurePolicy.rules[{index}] names container {name!r}, "
                           f"which the pod does not have")
    mirror = [c for c in containers if "mirror" in " ".join((c.get("command") or []) + (c.get("args") or []))]
    if len(mirror) != 1:
        problem(where, f"{at}.containers: {len(mirror)} run mirror, not 1")
        return
    container = mirror[0]
    at = f"{at}.containers[{containers.index(container)}]"
    check_command(container, pod, where, at, completions, per_index, documents)

    security = container.get("securityContext") or {}
    if security.get("readOnlyRootFilesystem") is not True:
        problem(where, f"{at}.securityContext.readOnlyRootFilesystem is not true")
    if security.get("allowPrivilegeEscalation") is not False:
        problem(where, f"{at}.securityContext.allowPrivilegeEscalation is not false")
    if not (security.get("runAsNonRoot") or pod_security.get("runAsNonRoot")):
        problem(where, f"{at}: runAsNonRoot is not set, in the pod or the container")
    user = security.get("runAsUser", pod_security.get("runAsUser"))
    image_user = containerfile_user()
    if image_user is not None and user is not None and user != image_user:
        problem(where, f"{at}: runs as user {user}, the Containerfile's user is {image_user}")
    if not container.get("resources"):
        problem(where, f"{at}.resources is not set")

    # Names that must exist in DIR: the Secret, the ServiceAccount.
    for index, source in enumerate(container.get("envFrom") or []):
        name = (source.get("secretRef") or {}).get("name")
        if name and ("Secret", name) not in documents:
            problem(where, f"{at}.envFrom[{index}] names Secret {name!r}, which no manifest here defines")
    account = pod.get("serviceAccountName")
    if account and ("ServiceAccount", account) not in documents:
        problem(where, f"{at}: serviceAccountName {account!r} is defined by no manifest here")


def check_command(container, pod, where, at, shards, per_index, documents):
    words = (container.get("command") or []) + (container.get("args") or [])
    if words[:2] == ["mirror-shard", "run"]:
        rest = words[2:]
        if "&&" in rest:
            run, publish = rest[:rest.index("&&")], rest[rest.index("&&") + 1:]
        else:
            run, publish = rest, []
        if publish and publish[0] != "publish":
            problem(where, f"{at}: after '&&' comes {publish[0]!r}, not publish")
        publish = publish[1:]
        installed = containerfile_text()
        if installed is not None and "/usr/local/bin/mirror-shard" not in installed:
            problem(where, f"{at}: runs mirror-shard, which the Containerfile does not install")
    elif words[:2] == ["mirror", "run"] or words[:1] == ["run"]:
        run, publish = words[words.index("run") + 1:], []
    else:
        problem(where, f"{at}: the command is {' '.join(words)!r}: not `mirror-shard run …` nor "
                       "`mirror run …` (a shell would not pass SIGTERM on to mirror)")
        return
    run_shards = option(run, "--shards")
    if run_shards is None:
        problem(where, f"{at}: mirror run has no --shards: every pod would run every job")
    elif not isinstance(shards, int) or run_shards != str(shards):
        problem(where, f"{at}: mirror run --shards {run_shards}, but completions is {shards!r}")
    if option(run, "--shard") is not None:
        problem(where, f"{at}: mirror run --shard I/N names one shard for every pod: --shards N takes it from the pod")
    state = option(run, "--state")
    if state is None or not state.startswith("s3://"):
        problem(where, f"{at}: mirror run --state is {state!r}, not s3://BUCKET/PREFIX: "
                       "an empty container would start the shard over")
    output = option(run, "--output")
    mounts = {m.get("mountPath"): m.get("name") for m in container.get("volumeMounts") or []}
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    if output is None:
        problem(where, f"{at}: mirror run has no --output")
    elif "emptyDir" not in (volumes.get(mounts.get(output.rstrip("/"))) or {}):
        problem(where, f"{at}: --output {output} is not the mount of an emptyDir volume "
                       "(the root file system is read-only)")
    lease = option(run, "--lease-time")
    if lease is not None and isinstance(per_index, int):
        waited = sum(10 * 2 ** retry for retry in range(per_index))
        if seconds(lease) is None:
            problem(where, f"{at}: --lease-time {lease!r} is not a duration")
        elif waited <= seconds(lease):
            problem(where, f"{at}: the Job's {per_index} retries wait {waited} s in all, not past "
                           f"--lease-time {lease}: a pod killed holding its lease would fail its index")
    if publish:
        publish_shards = option(publish, "--shards")
        if publish_shards != run_shards:
            problem(where, f"{at}: mirror publish --shards {publish_shards}, mirror run --shards {run_shards}")
        if option(publish, "--output") != output:
            problem(where, f"{at}: mirror publish --output {option(publish, '--output')}, "
                           f"mirror run --output {output}")
        if not publish[0].startswith("s3://"):
            problem(where, f"{at}: mirror publish's destination {publish[0]!r} is not s3://…")

    # The job files: arguments of run that are not options nor option values.
    files, skip = [], False
    for argument in run:
        if skip:
            skip = False
        elif argument.startswith("-"):
            skip = "=" not in argument and argument not in ("--quiet", "--verbose", "--refresh")
        else:
            files.append(argument)
    if not files:
        problem(where, f"{at}: mirror run is given no job file")
    env = {variable.get("name") for variable in container.get("env") or []}
    for source in container.get("envFrom") or []:
        secret = documents.get(("Secret", (source.get("secretRef") or {}).get("name")))
        if secret:
            env.update((secret.get("stringData") or {}).keys())
            env.update((secret.get("data") or {}).keys())
    for path in files:
        folder, name = os.path.split(path)
        volume = volumes.get(mounts.get(folder)) or {}
        configmap_name = (volume.get("configMap") or {}).get("name")
        if configmap_name is None:
            problem(where, f"{at}: job file {path}: {folder} is not the mount of a ConfigMap")
            continue
        configmap = documents.get(("ConfigMap", configmap_name))
        if configmap is None:
            problem(where, f"{at}: job file {path}: ConfigMap {configmap_name!r} is defined by no manifest here")
            continue
        text = (configmap.get("data") or {}).get(name)
        if text is None:
            problem(where, f"{at}: job file {path}: ConfigMap {configmap_name!r} has no key {name!r}")
            continue
        for variable in sorted(set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", strip_comments(text)))):
            if variable not in env:
                problem(where, f"{at}: job file {path} uses ${{{variable}}}, which neither env nor a Secret of envFrom sets")


def strip_comments(text):
    return "\n".join(re.sub(r"(^|\s)#.*", "", line) for line in text.splitlines())


def containerfile_text():
    path = os.path.join(ROOT, "Containerfile")
    return open(path, encoding="utf-8").read() if os.path.exists(path) else None


def containerfile_user():
    text = containerfile_text() or ""
    users = re.findall(r"^USER\s+(\d+)", text, re.M)
    return int(users[-1]) if users else None


def check_job_files(documents, schema_path):
    """The ConfigMaps' job files: YAML with version and jobs, and valid against the schema
    `mirror schema` prints when one is given."""
    validator = None
    if schema_path:
        import json
        import jsonschema
        validator = jsonschema.Draft202012Validator(json.load(open(schema_path, encoding="utf-8")))
    checked = 0
    for (kind, name), document in documents.items():
        if kind != "ConfigMap":
            continue
        for key, text in (document.get("data") or {}).items():
            if not key.endswith((".yaml", ".yml")):
                continue
            where = f"ConfigMap {name}, {key}"
            try:
                job_file = yaml.safe_load(text)
            except yaml.YAMLError as error:
                problem(where, f"not YAML: {error}")
                continue
            if not isinstance(job_file, dict) or "version" not in job_file or "jobs" not in job_file:
                problem(where, "not a job file (no version: or jobs:)")
                continue
            if validator:
                for error in validator.iter_errors(job_file):
                    path = "/".join(str(part) for part in error.absolute_path) or "(top)"
                    problem(where, f"{path}: {error.message}")
                checked += 1
    return checked


def check_folder(folder, label):
    """Every document of every YAML file of folder; returns {(kind, name): document}."""
    documents, by_file = {}, []
    for file_name in sorted(os.listdir(folder)):
        if not file_name.endswith((".yaml", ".yml")) or file_name == "kustomization.yaml":
            continue
        path = os.path.join(folder, file_name)
        try:
            loaded = [d for d in yaml.safe_load_all(open(path, encoding="utf-8")) if d is not None]
        except yaml.YAMLError as error:
            problem(f"{label}/{file_name}", f"not YAML: {error}")
            continue
        for document in loaded:
            by_file.append((f"{label}/{file_name}", document))
    return collect(by_file)


def collect(by_file):
    documents, places = {}, {}
    for where, document in by_file:
        if not isinstance(document, dict):
            problem(where, "a document that is not a mapping")
            continue
        name = (document.get("metadata") or {}).get("name")
        where = f"{where}: {document.get('kind')} {name}"
        check_document(document, where)
        key = (document.get("kind"), name)
        if key in documents:
            problem(where, "defined twice")
        documents[key], places[key] = document, where
    for key, document in documents.items():
        if key[0] == "CronJob":
            check_cronjob(document, places[key], documents)
    if not any(kind == "CronJob" for kind, _ in documents):
        problem("manifests", "no CronJob")
    return documents


def check_kustomization(folder, label):
    path = os.path.join(folder, "kustomization.yaml")
    if not os.path.exists(path):
        problem(label, "no kustomization.yaml")
        return 0
    kustomization = yaml.safe_load(open(path, encoding="utf-8")) or {}
    resources = kustomization.get("resources") or []
    for resource in resources:
        if not os.path.exists(os.path.join(folder, resource)):
            problem(f"{label}/kustomization.yaml", f"resource {resource} does not exist")
    for file_name in sorted(os.listdir(folder)):
        if (file_name.endswith((".yaml", ".yml")) and file_name not in resources
                and file_name not in ("kustomization.yaml", "secret.yaml")):
            problem(f"{label}/kustomization.yaml", f"{file_name} is not among its resources")
    if "secret.yaml" in resources:
        problem(f"{label}/kustomization.yaml", "lists secret.yaml: every apply would put its placeholders over the real keys")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("check-deploy: kubectl is not installed: the kustomization was not rendered")
        return 0
    rendered = subprocess.run([kubectl, "kustomize", folder], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    if rendered.returncode != 0:
        problem(f"{label}/kustomization.yaml", f"kubectl kustomize failed: {rendered.stderr.strip()}")
        return 0
    documents = [d for d in yaml.safe_load_all(rendered.stdout) if d is not None]
    # The Secret is applied by hand (secret.yaml): the rendered CronJob refers to it.
    secret = os.path.join(folder, "secret.yaml")
    extra = [d for d in yaml.safe_load_all(open(secret, encoding="utf-8")) if d] if os.path.exists(secret) else []
    collect([("kubectl kustomize", d) for d in documents] + [(f"{label}/secret.yaml", d) for d in extra])
    return len(documents)


# --- deploy/mirror-shard ---------------------------------------------------------------------

STAND_IN = """#!/bin/sh
echo "$*" >> "$LOG"
if [ "$1" = run ]; then
  if [ -n "${SLOW:-}" ]; then
    trap 'echo "pushed after TERM" >> "$LOG"; exit 143' TERM
    echo started >> "$LOG"
    i=0; while [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done   # 10 s at most
    echo "not stopped" >> "$LOG"; exit 0
  fi
  exit "${RUN_STATUS:-0}"
fi
exit 0
"""


def check_mirror_shard():
    script = os.path.join(ROOT, "deploy/mirror-shard")
    if not os.path.exists(script):
        problem("deploy/mirror-shard", "missing")
        return
    line = ["run", "/etc/mirror/jobs/a b.yaml", "--shards=4", "--state=s3://b/state", "&&",
            "publish", "s3://b/published", "--shards=4"]
    with tempfile.TemporaryDirectory() as folder:
        stand_in = os.path.join(folder, "mirror")
        with open(stand_in, "w") as file:
            file.write(STAND_IN)
        os.chmod(stand_in, 0o755)
        log = os.path.join(folder, "log")
        env = dict(os.environ, MIRROR=stand_in, LOG=log)

        def calls():
            return open(log).read().splitlines() if os.path.exists(log) else []

        for status, published, exits in ((0, True, 0), (75, True, 0), (1, False, 1), (2, False, 2),
                                         (3, False, 3), (143, False, 143)):
            if os.path.exists(log):
                os.remove(log)
            result = subprocess.run(["sh", script] + line, env=dict(env, RUN_STATUS=str(status)),
                                    stderr=subprocess.DEVNULL, timeout=30)
            want = ["run /etc/mirror/jobs/a b.yaml --shards=4 --state=s3://b/state"]
            if published:
                want.append("publish s3://b/published --shards=4")
            if calls() != want or result.returncode != exits:
                problem("deploy/mirror-shard", f"mirror run exiting {status}: ran {calls()}, exited "
                                               f"{result.returncode}; expected {want}, exit {exits}")
        os.remove(log)
        process = subprocess.Popen(["sh", script] + line, env=dict(env, SLOW="1"), stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while "started" not in calls() and time.time() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait()
        if "pushed after TERM" not in calls() or status != 143 or any(c.startswith("publish") for c in calls()):
            problem("deploy/mirror-shard", f"SIGTERM during mirror run: it logged {calls()} and exited "
                                           f"{status}; expected the run to get SIGTERM, no publish, exit 143")
        for arguments in (["publish", "x"], ["run", "a", "&&", "run", "b"], ["run", "a", "&&", "publish"]):
            result = subprocess.run(["sh", script] + arguments, env=env, stderr=subprocess.DEVNULL, timeout=30)
            if result.returncode != 2:
                problem("deploy/mirror-shard", f"{' '.join(arguments)!r} exited {result.returncode}, not 2 (usage)")


# --- The CronJob, run for real -------------------------------------------------------------

class Servers:
    """moto's S3 and the sample API on 127.0.0.1, stopped on exit."""

    def __init__(self):
        self.processes = []

    def __enter__(self):
        return self

    def __exit__(self, *_):
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def s3(self):
        """Starts moto's S3; returns its ready line (url, access_key, secret_key, region)."""
        import json
        process = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/auth-servers/s3_server.py")],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                   cwd=os.path.join(ROOT, "scripts/auth-servers"))
        self.processes.append(process)
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("scripts/auth-servers/s3_server.py exited before it was ready")
        return json.loads(line)

    def sample_api(self, folder):
        """Starts the sample API; returns its base URL."""
        port_file = os.path.join(folder, "sample-api.port")
        process = subprocess.Popen([sys.executable, os.path.join(ROOT, "scripts/sample-api.py"), "--port", "0",
                                    "--port-file", port_file], stderr=subprocess.DEVNULL)
        self.processes.append(process)
        deadline = time.time() + 30
        while not os.path.exists(port_file):
            if process.poll() is not None or time.time() > deadline:
                raise RuntimeError("scripts/sample-api.py did not start")
            time.sleep(0.05)
        return "http://127.0.0.1:" + open(port_file).read().strip()


def check_cronjob_runs(documents, binary):
    """Runs every index of the CronJob's Job as its pod would, at once; returns a summary."""
    cronjob = next((d for (kind, _), d in documents.items() if kind == "CronJob"), None)
    if cronjob is None:
        return "no CronJob"
    where = "the CronJob run for real"
    if not os.access(binary, os.X_OK):
        problem(where, f"no mirror binary at {binary}: build it (swift build), or name one with --mirror")
        return "not run"
    job = cronjob["spec"]["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    container = next(c for c in pod["containers"] if c.get("command") == ["mirror-shard"])
    mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    count = job["completions"]
    import json
    import boto3
    with tempfile.TemporaryDirectory() as folder, Servers() as servers:
        s3 = servers.s3()
        api = servers.sample_api(folder)
        bucket = "mirror-check-deploy"
        boto3.client("s3", endpoint_url=s3["url"], region_name=s3["region"], aws_access_key_id=s3["access_key"],
                     aws_secret_access_key=s3["secret_key"]).create_bucket(Bucket=bucket)

        # The pod's volumes: each ConfigMap's keys as files, each emptyDir a folder of the pod's own.
        def place(path, index):
            for mount, name in sorted(mounts.items(), key=lambda item: -len(item[0])):
                if path == mount or path.startswith(mount + "/"):
                    return os.path.join(folder, f"pod-{index}", name) + path[len(mount):]
            return path

        def pod_folder(index):
            for mount, name in mounts.items():
                target = os.path.join(folder, f"pod-{index}", name)
                volume = volumes.get(name) or {}
                os.makedirs(target, exist_ok=True)
                configmap = documents.get(("ConfigMap", (volume.get("configMap") or {}).get("name")))
                for key, text in ((configmap or {}).get("data") or {}).items():
                    with open(os.path.join(target, key), "w", encoding="utf-8") as file:
                        file.write(text)

        # The container's env: the Secret's keys (moto's), the env list (API_BASE the sample API's).
        env = {key: value for key, value in os.environ.items() if not key.startswith("AWS_")}
        for source in container.get("envFrom") or []:
            secret = documents.get(("Secret", (source.get("secretRef") or {}).get("name"))) or {}
            env.update({key: str(value) for key, value in (secret.get("stringData") or {}).items()})
        env.update({item["name"]: str(item.get("value", "")) for item in container.get("env") or []})
        env.update(AWS_ACCESS_KEY_ID=s3["access_key"], AWS_SECRET_ACCESS_KEY=s3["secret_key"],
                   AWS_ENDPOINT_URL_S3=s3["url"], AWS_REGION=s3["region"], API_BASE=api, MIRROR=binary)

        def arguments(index):
            words = []
            for word in container.get("args") or []:
                word = word.replace("REPLACE_ME", bucket)
                name, equals, value = word.partition("=")
                words.append(name + equals + place(value, index) if equals else place(word, index))
            return words

        runs = []
        for index in range(count):
            pod_folder(index)
            pod_env = dict(env, JOB_COMPLETION_INDEX=str(index), TMPDIR=place(env.get("TMPDIR", "/tmp"), index))
            runs.append(subprocess.Popen(["sh", os.path.join(ROOT, "deploy/mirror-shard")] + arguments(index),
                                         env=pod_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        failed, empty = [], []
        for index, run in enumerate(runs):
            try:
                out, err = run.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                run.kill()
                out, err = run.communicate()
            if run.returncode != 0:
                failed.append(index)
                problem(where, f"index {index} exited {run.returncode}, not 0: "
                               + " | ".join((out + err).strip().splitlines()[-6:]))
            elif "nothing published" in out:
                empty.append(index)

        # The top-level manifest names the shards that have jobs, and only those.
        args = container.get("args") or []
        destination = args[args.index("publish") + 1] if "publish" in args[:-1] else f"s3://{bucket}"
        prefix = destination.replace("REPLACE_ME", bucket)[len(f"s3://{bucket}/"):].strip("/")
        client = boto3.client("s3", endpoint_url=s3["url"], region_name=s3["region"],
                              aws_access_key_id=s3["access_key"], aws_secret_access_key=s3["secret_key"])
        if not failed:
            key = (prefix + "/" if prefix else "") + "manifest.json"
            manifest = json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
            named = sorted(entry["shard"] for entry in manifest.get("entries") or [])
            if named != sorted(set(range(count)) - set(empty)):
                problem(where, f"the published manifest names shards {named}; {empty} had no jobs of {count}")
    return f"{count} indexes, {len(empty)} of them with no jobs, published nothing and said so"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=os.path.join(ROOT, "deploy/kubernetes"))
    parser.add_argument("--job-schema", help="the JSON Schema `mirror schema` prints")
    parser.add_argument("--mirror", default=os.path.join(ROOT, ".build/debug/mirror"),
                        help="the mirror binary the CronJob's command runs (default .build/debug/mirror)")
    arguments = parser.parse_args()
    folder = arguments.folder
    label = os.path.relpath(folder, ROOT) if os.path.abspath(folder).startswith(ROOT + os.sep) else folder

    documents = check_folder(folder, label)
    rendered = check_kustomization(folder, label)
    job_files = check_job_files(documents, arguments.job_schema)
    check_mirror_shard()
    indexes = check_cronjob_runs(documents, arguments.mirror)

    if problems:
        for line in problems:
            print(f"check-deploy: {line}", file=sys.stderr)
        print(f"check-deploy: {len(problems)} problem(s) in {label}", file=sys.stderr)
        return 1
    print(f"check-deploy: {len(documents)} manifests of {label} valid against the Kubernetes API models "
          f"(Python client {kubernetes.__version__}), with the shard count, the policies and the names agreeing"
          + (f"; kubectl kustomize renders {rendered} documents that pass too" if rendered else "")
          + (f"; {job_files} job file(s) valid against the job-file schema" if job_files else "")
          + "; deploy/mirror-shard publishes after 0 and 75 only and passes SIGTERM on"
          + f"; run for real, every index of the CronJob's Job exits 0 ({indexes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
