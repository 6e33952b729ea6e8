#!/usr/bin/env sh
# Cuts the link between the regions of docker-compose.yml: the eu peers leave the `wan` network.
set -eu
for peer in registry-eu-a registry-eu-b; do
  docker network disconnect registry-two-regions_wan "$peer"
done
echo "regions cut apart; ./heal-link.sh restores the link"
