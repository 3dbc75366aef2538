#!/usr/bin/env bash
# Make the pgvector extension available in the local PostgreSQL, idempotently.
#
#   bash scripts/install-pgvector.sh            # as root (or through sudo)
#
# 1. Installs PostgreSQL from Debian when it is absent and starts the cluster
#    when it is down (a cluster this script creates trusts local TCP logins of
#    the `postgres` user, as the project's machines do, so the tests can connect).
# 2. When `vector` is not among pg_available_extensions: installs Debian's
#    postgresql-<major>-pgvector if the configured sources have it, otherwise
#    builds pgvector from Debian 13 (trixie)'s source package, because Debian 12
#    packages no pgvector. That source comes through a private apt state under
#    $PGVECTOR_WORK: the machine's own apt sources are never changed.
# 3. Creates the extension in template1 (so every new database has it) and in
#    the databases listed in $PGVECTOR_DATABASES (space-separated).
#
# When the extension is already available this takes well under a second.
set -euo pipefail

PGPORT=${PGPORT:-5432}
PGVECTOR_SUITE=${PGVECTOR_SUITE:-trixie}
PGVECTOR_MIRROR=${PGVECTOR_MIRROR:-http://deb.debian.org/debian}
PGVECTOR_WORK=${PGVECTOR_WORK:-/var/cache/threadkeep-pgvector}
PGVECTOR_DATABASES=${PGVECTOR_DATABASES:-}

log() { echo "install-pgvector: $*" >&2; }
die() {
    log "error: $*"
    exit 1
}

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        exec sudo --preserve-env=PGPORT,PGVECTOR_SUITE,PGVECTOR_MIRROR,PGVECTOR_WORK,PGVECTOR_DATABASES \
            bash "$0" "$@"
    fi
    die "run as root (apt-get and the PostgreSQL cluster need it)"
fi

export DEBIAN_FRONTEND=noninteractive
APT_UPDATED=0

apt_install() {
    # Try with the package lists as they are first: `apt-get update` costs time and network.
    if ! apt-get install -y -q --no-install-recommends "$@" >/dev/null; then
        if [ "$APT_UPDATED" -eq 0 ]; then
            apt-get update -q >/dev/null
            APT_UPDATED=1
        fi
        apt-get install -y -q --no-install-recommends "$@" >/dev/null
    fi
}

# --- 1. a running cluster ---------------------------------------------------------------------

INSTALLED_HERE=0
if ! command -v pg_lsclusters >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    log "installing PostgreSQL from Debian"
    apt_install postgresql postgresql-contrib
    INSTALLED_HERE=1
fi

cluster_line() {
    # "major name port status ..." of the cluster on $PGPORT, else of the first cluster.
    local clusters
    clusters=$(pg_lsclusters --no-header)
    awk -v port="$PGPORT" '$3 == port' <<<"$clusters" | head -n1 | grep . || head -n1 <<<"$clusters"
}

LINE=$(cluster_line || true)
if [ -z "$LINE" ]; then
    # Debian's package creates `main` unless configured not to (create_main_cluster = false).
    MAJOR=$(ls /usr/lib/postgresql | sort -n | tail -n1)
    log "creating cluster $MAJOR/main on port $PGPORT"
    pg_createcluster "$MAJOR" main --port "$PGPORT" >/dev/null
    INSTALLED_HERE=1
    LINE=$(cluster_line)
fi
read -r MAJOR CLUSTER PORT STATUS _ <<<"$LINE"

HBA=/etc/postgresql/$MAJOR/$CLUSTER/pg_hba.conf
if [ "$INSTALLED_HERE" -eq 1 ] && ! grep -q '^host all postgres 127.0.0.1/32 trust' "$HBA"; then
    # Only for a cluster this script brought: the tests and the documented default URL log in
    # as postgres over 127.0.0.1 without a password, as on the project's machines.
    sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$HBA"
    [ "$STATUS" != "online" ] || pg_ctlcluster --skip-systemctl-redirect "$MAJOR" "$CLUSTER" reload
fi

if [ "$STATUS" != "online" ]; then
    log "starting PostgreSQL $MAJOR/$CLUSTER"
    pg_ctlcluster --skip-systemctl-redirect "$MAJOR" "$CLUSTER" start
fi

psql_admin() {
    # Peer authentication over the Unix socket: works whatever pg_hba says about TCP.
    runuser -u postgres -- env PGOPTIONS='-c client_min_messages=warning' \
        psql -X -q -v ON_ERROR_STOP=1 -At -p "$PORT" "$@"
}

for _ in $(seq 1 30); do
    psql_admin -d postgres -c 'SELECT 1' >/dev/null 2>&1 && break
    sleep 1
done
psql_admin -d postgres -c 'SELECT 1' >/dev/null || die "PostgreSQL $MAJOR/$CLUSTER does not answer on port $PORT"

available() {
    [ "$(psql_admin -d postgres -c "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")" = "1" ]
}

# --- 2. the extension's files -----------------------------------------------------------------

build_from_debian_source() {
    local pg_config=/usr/lib/postgresql/$MAJOR/bin/pg_config
    log "building pgvector from Debian $PGVECTOR_SUITE's source package for PostgreSQL $MAJOR"
    apt_install "postgresql-server-dev-$MAJOR" make gcc dpkg-dev
    mkdir -p "$PGVECTOR_WORK/lists/partial" "$PGVECTOR_WORK/parts" "$PGVECTOR_WORK/cache/archives/partial"
    echo "deb-src $PGVECTOR_MIRROR $PGVECTOR_SUITE main" >"$PGVECTOR_WORK/sources.list"
    # Private sources, lists and caches: the machine's apt configuration and state stay as they are.
    local private=(
        -o "Dir::Etc::SourceList=$PGVECTOR_WORK/sources.list"
        -o "Dir::Etc::SourceParts=$PGVECTOR_WORK/parts"
        -o "Dir::State::Lists=$PGVECTOR_WORK/lists"
        -o "Dir::Cache=$PGVECTOR_WORK/cache"
        -o "APT::Sandbox::User=root"
    )
    apt-get "${private[@]}" update -q >/dev/null
    rm -rf "$PGVECTOR_WORK/src"
    mkdir -p "$PGVECTOR_WORK/src"
    (cd "$PGVECTOR_WORK/src" && apt-get "${private[@]}" source -q pgvector >/dev/null 2>&1) ||
        die "apt-get source pgvector from $PGVECTOR_SUITE failed"
    local dir
    dir=$(find "$PGVECTOR_WORK/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
    [ -n "$dir" ] || die "no pgvector source tree under $PGVECTOR_WORK/src"
    # OPTFLAGS="" drops -march=native, so the library runs on any x86-64 machine it is copied to.
    make -C "$dir" -s PG_CONFIG="$pg_config" OPTFLAGS="" >/dev/null
    make -C "$dir" -s PG_CONFIG="$pg_config" OPTFLAGS="" install >/dev/null
}

if available; then
    log "pgvector already available in PostgreSQL $MAJOR"
else
    if apt-cache show "postgresql-$MAJOR-pgvector" >/dev/null 2>&1 &&
        apt_install "postgresql-$MAJOR-pgvector"; then
        log "installed postgresql-$MAJOR-pgvector from the configured Debian sources"
    else
        build_from_debian_source
    fi
    available || die "pgvector is still not available to PostgreSQL $MAJOR after installing it"
fi

# --- 3. the extension in the databases ---------------------------------------------------------

for db in template1 $PGVECTOR_DATABASES; do
    psql_admin -d "$db" -c 'CREATE EXTENSION IF NOT EXISTS vector' >/dev/null
done
log "pgvector $(psql_admin -d template1 -c "SELECT extversion FROM pg_extension WHERE extname = 'vector'") ready" \
    "(PostgreSQL $MAJOR/$CLUSTER, port $PORT)"
