#!/usr/bin/env sh
# Restores the link cut by cut-link.sh; the regions converge by themselves.
set -eu
for peer in registry-eu-a registry-eu-b; do
  docker network connect registry-two-regions_wan "$peer"
done
echo "link restored"
