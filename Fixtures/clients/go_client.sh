#!/bin/sh
# netsim exec client for Go's net/http (`--client go`): runs .build/clients/go_client, built from
# Fixtures/clients/go/main.go (standard library only, no network: GOFLAGS=-mod=mod, GOPROXY=off)
# when missing or older than its source. ci/setup builds it first, so a scenario run never waits
# for the compiler; a build here happens before hello, so it is not scenario time either way.
# Built to a temporary name and renamed, so runs starting at once never see half a binary.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
source="$here/go/main.go"
binary="$repo/.build/clients/go_client"
if [ ! -x "$binary" ] || [ "$source" -nt "$binary" ]; then
    mkdir -p "$repo/.build/clients"
    tmp="$binary.$$"
    (cd "$here/go" && GOPROXY=off GOFLAGS= GO111MODULE=off go build -o "$tmp" main.go) >&2
    mv -f "$tmp" "$binary"
fi
exec "$binary" "$@"
