# Sourced by calibrate and levers: the two photograph sets, cut the same way
# (a 1800-px thumbnail of each photo, then six 600x600 crops, p0 ... in
# photo order: left/centre/right x top/bottom), kept lossless (PNG).
#
#   calibration: Debian's mate-backgrounds nature set (12 photos): the
#                table (QualityTable.swift) is fitted on it
#   heldout:     photographs from other Debian packages, never used for the
#                fit: plasma-workspace-wallpapers' 11 photographs and
#                lomiri-wallpapers-20.04's one (Kleiber); 12 photos, 72 crops
#
# photo_set NAME DIR: cuts set NAME into DIR (once; DIR/done marks it).
photo_set() {
  local set=$1 dir=$2
  [ -f "$dir/done" ] && return 0
  rm -rf "$dir" "$dir.deb"; mkdir -p "$dir" "$dir.deb"
  local files=()
  case "$set" in
    calibration)
      (cd "$dir.deb" && apt-get download mate-backgrounds >/dev/null 2>&1 && dpkg-deb -x mate-backgrounds_*.deb x)
      files=("$dir".deb/x/usr/share/backgrounds/mate/nature/*.jpg) ;;
    heldout)
      (cd "$dir.deb" && apt-get download plasma-workspace-wallpapers lomiri-wallpapers-20.04 >/dev/null 2>&1 &&
        for d in *.deb; do dpkg-deb -x "$d" x; done)
      local w="$dir.deb/x/usr/share/wallpapers" p
      for p in BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite OneStandsOut Path summer_1am; do
        files+=("$w/$p/contents/images/2560x1600.jpg")
      done
      files+=("$dir.deb/x/usr/share/backgrounds/Kleiber_by_Lukas_Baubkus.jpg") ;;
    *) echo "photo_set: no set $set" >&2; return 1 ;;
  esac
  local i=0 f W H l t
  for f in "${files[@]}"; do
    vips thumbnail "$f" "$dir/big.v" 1800 --size down 2>/dev/null || continue
    W=$(vipsheader -f width "$dir/big.v"); H=$(vipsheader -f height "$dir/big.v")
    for l in 0 $(( (W - 600) / 2 )) $((W - 600)); do for t in 0 $((H - 600)); do
      vips crop "$dir/big.v" "$dir/p$i.png" $l $t 600 600 && i=$((i + 1))
    done; done
  done
  rm -rf "$dir/big.v" "$dir.deb"
  [ "$i" -ge 12 ] || { echo "photo_set $set: only $i crops" >&2; return 1; }
  touch "$dir/done"
}
