# Made by jkvbench --plot: run `gnuplot plots.gp` in this directory.
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 900,560 noenhanced font ',9'
set rmargin 12
set output 'throughput_writelat.png'
set title 'writelat: operations per second (higher is better)'
set key off
set logscale y
set ylabel 'ops/s'
set xrange [-0.6:6]
set yrange [*:*]
plot 'plot_writelat.dat' using 0:3:(0.8):2:xtic(1) with boxes lc variable
set output 'latency_writelat.png'
set title 'writelat: latency per operation in microseconds (lower is better)'
set key top left
set ylabel 'microseconds'
set style data histograms
set style histogram clustered gap 1
set xrange [*:*]
plot 'plot_writelat.dat' using 4:xtic(1) title 'p50', '' using 5 title 'p99', '' using 6 title 'p99.9', '' using 7 title 'max'
set style data points
unset logscale y
set output 'fsyncs_writelat.png'
set title 'writelat: fsync + fdatasync + msync calls per commit'
set key off
set ylabel 'flushes per commit'
set xrange [-0.6:6]
set yrange [0:*]
set offsets 0, 0, graph 0.08, 0
plot 'plot_writelat.dat' using 0:8:(0.8):2:xtic(1) with boxes lc variable
set yrange [*:*]
set xrange [*:*]
set offsets 0, 0, 0, 0
set terminal pngcairo size 1000,640 noenhanced font ',9'
set output 'percentiles_writelat.png'
set multiplot layout 1,1 title "writelat: latency by percentile (log scales; lower is better)" font ',11'
set logscale xy
set xrange [1:7500]
set yrange [73.4893:71176.8]
set xtics norotate ("0%%" 1, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000, "99.999%%" 100000, "99.9999%%" 1000000)
set grid xtics ytics
set key top left opaque box
set ylabel 'microseconds'
set xlabel 'percentile'
set style data lines
set title ''
plot 'percentiles_writelat.dat' index 0 using 1:3 with lines lw 1.5 lc rgb '#9400d3' dt 1 title 'journalkv/delete/full', \
     'percentiles_writelat.dat' index 1 using 1:3 with lines lw 1.5 lc rgb '#009e73' dt 1 title 'journalkv/wal/full/default', \
     'percentiles_writelat.dat' index 2 using 1:3 with lines lw 1.5 lc rgb '#0072b2' dt 1 title 'journalkv/wal/full/async:0/100', \
     'percentiles_writelat.dat' index 3 using 1:3 with lines lw 1.5 lc rgb '#e69f00' dt 1 title 'journalkv/wal/full/async:100/300', \
     'percentiles_writelat.dat' index 4 using 1:3 with lines lw 1.5 lc rgb '#e51e10' dt 1 title 'sqlite/delete/full', \
     'percentiles_writelat.dat' index 5 using 1:3 with lines lw 1.5 lc rgb '#56b4e9' dt 1 title 'sqlite/wal/full/default'
unset multiplot
reset
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
set terminal pngcairo size 1260,560 noenhanced font ',9'
set datafile separator ','
set xtics norotate
set key off
set xrange [0:5000]
set lmargin 9
set rmargin 2
set xlabel 'commit' offset 0,0.5
set output 'writelat_latency_full.png'
set multiplot layout 2,3 title "writelat, sync full: the slowest commit of each window of commits, in microseconds (log scale, the same in every panel)" font ',11'
set logscale y
set yrange [84.7954:11566.2]
set ylabel 'us'
set title 'journalkv/delete'
plot 'writelat_journalkv_delete_full.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'journalkv/wal/default'
plot 'writelat_journalkv_wal_full.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'journalkv/wal/async:0/100'
plot 'writelat_journalkv_wal_full_async-0-100.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'journalkv/wal/async:100/300'
plot 'writelat_journalkv_wal_full_async-100-300.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'sqlite/delete'
plot 'writelat_sqlite_delete_full.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#e51e10' dt 1 notitle
set title 'sqlite/wal/default'
plot 'writelat_sqlite_wal_full.csv' every ::1 using 1:2 with lines lw 1.5 lc rgb '#e51e10' dt 1 notitle
unset multiplot
set terminal pngcairo size 900,560 noenhanced font ',9'
set output 'writelat_logsize_full.png'
set multiplot layout 2,2 title "writelat, sync full: log size on disk between commits, in KiB (the same scale in every panel)\nno log file on disk between commits: journalkv/delete sqlite/delete" font ',11'
unset logscale y
set yrange [0:4505.6]
set ylabel 'KiB'
set title 'journalkv/wal/default'
plot 'writelat_journalkv_wal_full.csv' every ::1 using 1:($3/1024) with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'journalkv/wal/async:0/100'
plot 'writelat_journalkv_wal_full_async-0-100.csv' every ::1 using 1:($3/1024) with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'journalkv/wal/async:100/300'
plot 'writelat_journalkv_wal_full_async-100-300.csv' every ::1 using 1:($3/1024) with lines lw 1.5 lc rgb '#0072b2' dt 1 notitle
set title 'sqlite/wal/default'
plot 'writelat_sqlite_wal_full.csv' every ::1 using 1:($3/1024) with lines lw 1.5 lc rgb '#e51e10' dt 1 notitle
unset multiplot
reset
set datafile separator whitespace
set style fill solid 0.85 border -1
set grid ytics
set xtics rotate by -40 nomirror
