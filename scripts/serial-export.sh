# serial-export.sh: carry files out of a VM over a serial port: frame them on one side, check and unpack them on the other (POSIX sh, sourced).
#
# export_file FILE [NAME] prints one frame to stdout (a raw serial tty):
#
#     ktt-export-begin NAME SIZE SHA256
#     base64 lines of FILE, gzip-compressed
#     ktt-export-end NAME
#
# import_files STREAM DIR unpacks every frame of STREAM (the file a QEMU
# -serial file: wrote) into DIR/NAME, checks each file's size and SHA-256
# against its frame header, prints "NAME SIZE" per file and fails, naming the
# file, on a truncated frame or a mismatch. Lines outside frames are ignored.
# Works with busybox (in the VMs) and coreutils (on the build machine).

# shellcheck shell=sh

export_file()
{
	local file=$1 name=${2:-${1##*/}} size sum

	[ -f "$file" ] || { echo "export_file: $file: no such file" >&2; return 1; }
	size=$(wc -c <"$file")
	sum=$(sha256sum <"$file")
	echo "ktt-export-begin $name $((size)) ${sum%% *}"
	gzip -c "$file" | base64 || return 1
	echo "ktt-export-end $name"
}

import_files()
{
	local stream=$1 dir=$2 status name size sum got rc=0

	mkdir -p "$dir" && rm -f "$dir/.manifest" || return 1
	# awk splits the frames: DIR/NAME.b64 holds the data, the manifest the
	# headers of the complete frames; a truncated frame leaves a marker.
	awk -v dir="$dir" '
		{ sub(/\r$/, "") }
		/^ktt-export-begin [A-Za-z0-9._-]+ [0-9]+ [0-9a-f]+$/ {
			if (name != "") print "truncated " name >(dir "/.manifest")
			name = $2; hdr = $2 " " $3 " " $4; out = dir "/" name ".b64"
			printf "" >out
			next
		}
		name != "" && $0 == "ktt-export-end " name {
			close(out); print "ok " hdr >(dir "/.manifest"); name = ""
			next
		}
		name != "" { print >out }
		END {
			if (name != "") print "truncated " name >(dir "/.manifest")
			printf "" >>(dir "/.manifest")
		}
	' "$stream" || return 1
	while read -r status name size sum; do
		if [ "$status" != ok ]; then
			echo "import_files: $stream: the frame of $name is truncated" >&2
			rc=1
			continue
		fi
		if ! base64 -d <"$dir/$name.b64" | gzip -dc >"$dir/$name"; then
			echo "import_files: $stream: $name does not decode (base64/gzip)" >&2
			rc=1
			continue
		fi
		rm -f "$dir/$name.b64"
		got=$(wc -c <"$dir/$name")
		if [ "$((got))" != "$size" ]; then
			echo "import_files: $dir/$name: $((got)) bytes, the sender had $size" >&2
			rc=1
			continue
		fi
		got=$(sha256sum <"$dir/$name")
		if [ "${got%% *}" != "$sum" ]; then
			echo "import_files: $dir/$name: SHA-256 ${got%% *}, the sender had $sum" >&2
			rc=1
			continue
		fi
		echo "$name $size"
	done <"$dir/.manifest"
	rm -f "$dir/.manifest"
	return $rc
}
